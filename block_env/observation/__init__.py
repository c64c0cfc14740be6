"""What one seat may know, as a fixed-length float32 vector (seat-relative, padded to 4).

Relative seat r is the seat r places clockwise from the observer (r = 0 is the observer).
Every field is public or the observer's own; no opponent tile and no out-of-play tile ever
appears. The layout depends only on the tile set (T tiles, values 0..N; see ``obs_layout``):
the same for every player count and variant. For the standard set (T = 28, N = 6):

==================  ==========  ===========================================================
field               indices     meaning (size for any set)
==================  ==========  ===========================================================
hand                0..27       1 if the observer holds tile i (tiles in the set's order; T)
line                28..55      1 if tile i is on the line (T)
left_end            56..62      one-hot value of the left open end, all 0 on an empty line
                                (N+1)
right_end           63..69      one-hot value of the right open end (N+1)
empty_line          70          1 before the opening
tile_counts         71..74      tiles in hand, by relative seat (0 for absent seats)
voids               75..102     N+1 flags per relative seat: values that seat showed lacking
                                by passing (a pass shows it holds neither end's value)
scores              103..106    match scores, by relative seat (raw points)
target              107         the match target (raw points)
leader              108..111    one-hot relative seat that led this hand
to_act              112..115    one-hot relative seat to act (all 0 once the episode ended)
seats               116..119    1 for relative seats that are in the game
partnership         120         1 in partnership play (the partner is relative seat 2)
out_of_play         121         number of tiles out of play this hand (a count only)
==================  ==========  ===========================================================

Length: 2T + 6(N+1) + 24 (122 for the standard set). Counts and scores are raw integers
stored as float32 (exact); ``OBS_SCALE`` (or ``ObsLayout.scale``) divides them into roughly
[0, 1] for networks. The module-level names are those of the standard set.
"""

from block_env.observation.layout import (
    FIELDS,
    MAX_SEATS,
    OBS_HIGH,
    OBS_LOW,
    OBS_SCALE,
    STANDARD_OBS_DIM,
    STATE_DIM,
    STATE_HIGH,
    STATE_LOW,
    ObsLayout,
    layout_for_dim,
    obs_dim_for,
    obs_layout,
)
from block_env.observation.reference import decode, encode, encode_state
from block_env.tiles import renamed_getattr

__all__ = [
    "FIELDS",
    "MAX_SEATS",
    "STANDARD_OBS_DIM",
    "OBS_HIGH",
    "OBS_LOW",
    "OBS_SCALE",
    "STATE_DIM",
    "STATE_HIGH",
    "STATE_LOW",
    "ObsLayout",
    "decode",
    "encode",
    "encode_state",
    "layout_for_dim",
    "obs_dim_for",
    "obs_layout",
]

__getattr__ = renamed_getattr(__name__, {"OBS_DIM": "STANDARD_OBS_DIM"}, globals())
