"""Game records: a whole Block game as JSON, written while it is played, replayed and checked.

A record holds the format version, the env's configuration keywords, the reset seed, and per
hand its deal (every seat's tiles as ``[a, b]`` pairs), leader and starting scores, every
move with its seat, and the result (winner, blocked, pips, points, scores after); then the
final scores. Deals are stored in full, so a record replays even where the random generator
deals differently: ``replay`` resets the env with ``options={"hands", "leader", "scores"}``
for any hand the seed does not reproduce.

* ``RecordingWrapper(env)`` records any block-env env (bare or wrapped) as it is played;
  ``wrapper.record`` is the record so far and ``wrapper.save(path)`` writes it.
* ``replay(record)`` plays a record through a new ``raw_env`` and checks every move, every
  hand result and the final scores, raising ``RecordMismatch`` on the first difference.
* ``load`` / ``save`` read and write record files (``RecordError`` names what is malformed).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pettingzoo.utils import BaseWrapper

from block_env.rendering import tiles_of
from block_env.tiles import iter_tiles

__all__ = [
    "FORMAT",
    "VERSION",
    "RecordError",
    "RecordMismatch",
    "Recorder",
    "RecordingWrapper",
    "ReplayReport",
    "load",
    "replay",
    "save",
]

FORMAT = "block-env game record"
VERSION = 1
ENDS = ("left", "right")


class RecordError(ValueError):
    """A record that is not a well-formed block-env record (missing key, wrong type or
    version): the message says what is wrong."""


class RecordMismatch(ValueError):
    """A record whose replay through the env differs from what it says: the message names
    the hand, the move and both values."""


# ----------------------------------------------------------------------------- writing


def config_keywords(raw: Any) -> dict[str, Any]:
    """The constructor keywords of the env's game configuration (every ``init`` field of its
    config dataclass), so that ``raw_env(**keywords)`` rebuilds the same game."""
    config = raw.config
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.init}


def move_entry(config: Any, seat: int, action: int) -> dict[str, Any]:
    """A move as stored: seat, the env's action id, and the tile ``[a, b]`` and end
    (``"left"``/``"right"``), or ``"pass": true``; replay reads the tile and end."""
    tiles = tiles_of(config)
    if action == tiles.pass_action:
        return {"seat": int(seat), "action": int(action), "pass": True}
    tile, end = divmod(int(action), 2)
    entry = {"seat": int(seat), "action": int(action)}
    return {**entry, "tile": list(tiles.tiles[tile]), "end": ENDS[end]}


def move_action(config: Any, move: dict[str, Any], where: str) -> int:
    """The action id of a stored move in the game ``config`` (from its tile and end)."""
    tiles = tiles_of(config)
    if move.get("pass") is True:
        return tiles.pass_action
    tile, end = move.get("tile"), move.get("end")
    if end not in ENDS:
        raise RecordError(f"{where}: end {end!r} is not 'left' or 'right'")
    if not isinstance(tile, list):
        raise RecordError(f"{where}: tile {tile!r} is not a pair [a, b] (nor is it a pass)")
    try:
        return 2 * tiles.tile_index(tuple(tile)) + ENDS.index(end)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"{where}: tile {tile!r} is not a tile ({exc})") from None


def _hand_start(config: Any, state: Any) -> dict[str, Any]:
    pairs = tiles_of(config).tiles
    return {
        "leader": int(state.leader),
        "scores": [int(v) for v in state.scores],
        "deal": [[list(pairs[t]) for t in iter_tiles(h)] for h in state.hands],
        "moves": [],
        "result": None,
    }


class Recorder:
    """Builds a record from a raw env as it is played: ``start`` after a reset, ``moved``
    after each step that played a move."""

    def __init__(self, raw: Any, seed: int | None, players: list[str] | None = None) -> None:
        self.raw = raw
        self.record: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "config": config_keywords(raw),
            "seed": None if seed is None else int(seed),
            "players": None if players is None else [str(p) for p in players],
            "hands": [_hand_start(raw.config, raw.game)],
            "scores": [int(v) for v in raw.game.scores],
            "finished": False,
            "winners": [],
        }

    def restart_hand(self) -> None:
        """The env was reset to a new deal for the current (still empty) hand."""
        self.record["hands"][-1] = _hand_start(self.raw.config, self.raw.game)

    def moved(self, seat: int, action: int) -> None:
        """Record the move ``seat`` just played; on a hand's end its result and the next deal."""
        raw = self.raw
        hands = self.record["hands"]
        hands[-1]["moves"].append(move_entry(raw.config, seat, action))
        info = raw.infos[raw.possible_agents[0]]
        if not info["hand_over"]:
            return
        scores = [int(v) for v in raw.scores]
        winner = int(info["hand_winner"])
        hands[-1]["result"] = {
            "winner": None if winner < 0 else winner,
            "blocked": bool(info["hand_blocked"]),
            "pips": [int(v) for v in info["hand_pips"]],
            "points": [int(v) for v in info["hand_points"]],
            "scores": scores,
        }
        self.record["scores"] = list(scores)
        if info["match_over"]:
            self.record["finished"] = True
            self.record["winners"] = np.flatnonzero(info["match_winners"]).tolist()
        else:
            hands.append(_hand_start(raw.config, raw.game))


class RecordingWrapper(BaseWrapper):
    """Records every game played through ``env`` (any block-env env, bare or wrapped).

    ``record`` is the game since the last ``reset`` (a dict ready for ``json.dump``);
    ``save(path)`` writes it. ``players`` optionally labels the seats in the record."""

    def __init__(self, env: Any, players: list[str] | None = None) -> None:
        super().__init__(env)
        self.players = players
        self.recorder: Recorder | None = None

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        self.recorder = Recorder(self.unwrapped, seed, self.players)

    def step(self, action: Any) -> None:
        raw = self.unwrapped
        before = raw.game
        live = bool(raw.agents) and not raw.terminations.get(raw.agent_selection, True)
        seat = raw.possible_agents.index(raw.agent_selection)
        self.env.step(action)
        # Every legal move gives a new game state; an illegal one that the wrapped env
        # turned into a loss (``env()``) leaves it as it was, and is not a move.
        if self.recorder is not None and live and action is not None and raw.game is not before:
            self.recorder.moved(seat, int(action))

    @property
    def record(self) -> dict[str, Any]:
        if self.recorder is None:
            raise RuntimeError("call reset() before reading the record")
        return self.recorder.record

    def save(self, path: str | os.PathLike) -> Path:
        """Write the record as JSON to ``path``; returns the path."""
        return save(self.record, path)


def save(record: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write ``record`` as indented JSON (atomically: a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


# ----------------------------------------------------------------------------- reading


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a record file; RecordError (a ValueError) says what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordError(f"cannot read record {path}: {exc.strerror or exc}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path} is not JSON: {exc}") from None
    validate(record)
    return record


def validate(record: Any) -> None:
    """Check a record's shape (not its game: ``replay`` does that)."""
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise RecordError(f"not a block-env game record: 'format' must be {FORMAT!r}")
    if record.get("version") != VERSION:
        raise RecordError(
            f"record version {record.get('version')!r} is not supported: this block-env "
            f"reads version {VERSION}"
        )
    for key, kind in (("config", dict), ("hands", list), ("scores", list)):
        if not isinstance(record.get(key), kind):
            raise RecordError(f"record key {key!r} must be a {kind.__name__}")
    seed = record.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise RecordError(f"record seed {seed!r} must be null or an int >= 0")
    if not record["hands"]:
        raise RecordError("record has no hands")
    for k, hand in enumerate(record["hands"], 1):
        if not isinstance(hand, dict):
            raise RecordError(f"hand {k} must be an object")
        for key, kind in (("deal", list), ("moves", list), ("scores", list), ("leader", int)):
            if not isinstance(hand.get(key), kind):
                raise RecordError(f"hand {k}: key {key!r} must be a {kind.__name__}")
        for m, move in enumerate(hand["moves"], 1):
            if not isinstance(move, dict) or not isinstance(move.get("seat"), int):
                raise RecordError(f"hand {k}, move {m}: must be an object with an int 'seat'")
            if move.get("pass") is not True and not isinstance(move.get("tile"), list):
                raise RecordError(f"hand {k}, move {m}: needs a 'tile' [a, b] or 'pass': true")
        if hand.get("result") is not None and not isinstance(hand["result"], dict):
            raise RecordError(f"hand {k}: 'result' must be an object or null")


# ----------------------------------------------------------------------------- replay


@dataclasses.dataclass
class ReplayReport:
    """What a successful replay found: counts, final scores, and how many deals the seed
    still reproduces (the rest were set from the record's deals)."""

    hands: int
    moves: int
    scores: list[int]
    finished: bool
    seeded_deals: int
    env: Any = dataclasses.field(repr=False, default=None)  # the raw env at the end
    recorder: Recorder | None = dataclasses.field(repr=False, default=None)

    def summary(self) -> str:
        seed = f"{self.seeded_deals} of {self.hands} deals reproduced from the seed"
        state = "finished" if self.finished else "unfinished (can be continued)"
        return (
            f"ok: {self.hands} hand{'s' if self.hands != 1 else ''}, {self.moves} moves, every "
            f"result matches; final scores {self.scores}; game {state}; {seed}"
        )


def _deal_masks(config: Any, hand: dict[str, Any], k: int) -> tuple[int, ...]:
    index = tiles_of(config).tile_index
    masks = []
    for seat, tiles in enumerate(hand["deal"]):
        mask = 0
        try:
            for t in tiles:
                mask |= 1 << index(tuple(t))
        except (TypeError, ValueError) as exc:
            raise RecordError(f"hand {k}: deal of seat {seat}: {exc}") from None
        masks.append(mask)
    return tuple(masks)


def _check_result(k: int, hand: dict[str, Any], info: dict[str, Any], scores: list[int]) -> None:
    want = hand.get("result")
    if want is None:
        raise RecordMismatch(
            f"hand {k}: the env ended the hand after its last move, but the record has no "
            "result for it"
        )
    winner = int(info["hand_winner"])
    got = {
        "winner": None if winner < 0 else winner,
        "blocked": bool(info["hand_blocked"]),
        "pips": [int(v) for v in info["hand_pips"]],
        "points": [int(v) for v in info["hand_points"]],
        "scores": scores,
    }
    for key, value in got.items():
        if want.get(key) != value:
            raise RecordMismatch(
                f"hand {k}: result {key!r} is {want.get(key)!r} in the record but "
                f"{value!r} when replayed"
            )


def make_env(record: dict[str, Any], **extra: Any) -> Any:
    """A new ``raw_env`` with the record's configuration (plus ``extra`` keywords such as
    ``render_mode``); RecordError when this block-env cannot build it. A recorded keyword
    this ``raw_env`` does not take is dropped only when the game is the same without it."""
    import inspect

    from block_env.config import BlockConfig
    from block_env.env import raw_env

    config = dict(record["config"])
    accepted = set(inspect.signature(raw_env.__init__).parameters)
    unknown = [k for k in config if k not in accepted]
    if unknown:
        kept = {k: v for k, v in config.items() if k in accepted}
        try:
            same = BlockConfig(**config) == BlockConfig(**kept)
        except (TypeError, ValueError):
            same = False
        if not same:
            raise RecordError(
                f"record configuration {config!r}: this block-env's raw_env does not take "
                f"{', '.join(unknown)}"
            )
        config = kept
    try:
        return raw_env(**config, **extra)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"record configuration {config!r}: {exc}") from None


def replay(
    record: dict[str, Any],
    on_step: Callable[[Any, dict[str, Any] | None], None] | None = None,
    env: Any = None,
) -> ReplayReport:
    """Play ``record`` through a raw env, checking every move, hand result and the final
    scores; ``on_step(raw_env, move)`` is called after the reset (``move`` None) and after
    every move. Returns a ``ReplayReport`` (with the env at the final position and a
    ``Recorder`` that can go on recording); RecordMismatch on the first difference."""
    validate(record)
    raw = make_env(record) if env is None else env
    seed = record.get("seed")
    moves = seeded = 0
    recorder: Recorder | None = None
    hands = record["hands"]
    for k, hand in enumerate(hands, 1):
        deal = _deal_masks(raw.config, hand, k)
        options: dict[str, Any] = {"hands": hand["deal"], "scores": hand["scores"]}
        if raw.config.opener != "highest_double":
            options["leader"] = hand["leader"]
        if k == 1:
            # Always the recorded deal; with the seed, the generator then deals later hands
            # as in the recorded game (a reset draws the lot and deal whatever is overridden).
            _reset(raw, seed, options, k)
            recorder = Recorder(raw, seed, record.get("players"))
            same = seed is not None and _seed_deal(record, k) == deal
        else:
            game = raw.game
            same = (
                tuple(game.hands) == deal
                and int(game.leader) == hand["leader"]
                and list(game.scores) == hand["scores"]
            )
            if not same:
                _reset(raw, None, options, k)
                recorder.restart_hand()
        seeded += bool(same)
        game = raw.game
        if int(game.leader) != hand["leader"]:
            raise RecordMismatch(
                f"hand {k}: the leader is seat {hand['leader']} in the record but seat "
                f"{int(game.leader)} when dealt (opener={raw.config.opener!r})"
            )
        if on_step is not None:
            on_step(raw, None)
        ended = False
        for m, move in enumerate(hand["moves"], 1):
            where = f"hand {k}, move {m}"
            if ended:
                raise RecordMismatch(
                    f"{where}: the hand already ended after move {m - 1}, but the record "
                    f"has {len(hand['moves'])} moves"
                )
            seat = raw.possible_agents.index(raw.agent_selection)
            if move["seat"] != seat:
                raise RecordMismatch(
                    f"{where}: the record has seat {move['seat']} to play, the env seat {seat}"
                )
            action = move_action(raw.config, move, where)
            try:
                raw.step(action)
            except ValueError as exc:
                raise RecordMismatch(f"{where}: seat {seat} cannot play that: {exc}") from None
            recorder.moved(seat, action)
            moves += 1
            if on_step is not None:
                on_step(raw, move)
            info = raw.infos[raw.possible_agents[0]]
            if info["hand_over"]:
                ended = True
                _check_result(k, hand, info, [int(v) for v in raw.scores])
                if info["match_over"] and k < len(hands):
                    raise RecordMismatch(
                        f"hand {k}: the game ended here, but the record has {len(hands)} hands"
                    )
        if not ended and (hand.get("result") is not None or k < len(hands)):
            raise RecordMismatch(
                f"hand {k}: the record says the hand ended after move {len(hand['moves'])}, "
                "but the env has it still running"
            )
    final = [int(v) for v in raw.scores]
    if record["scores"] != final:
        raise RecordMismatch(
            f"final scores are {record['scores']} in the record but {final} when replayed"
        )
    finished = bool(recorder.record["finished"])
    if bool(record.get("finished")) != finished:
        raise RecordMismatch(
            f"the record says finished={record.get('finished')!r}, the replay {finished}"
        )
    if finished and record.get("winners") != recorder.record["winners"]:
        raise RecordMismatch(
            f"the winners are {record.get('winners')!r} in the record but "
            f"{recorder.record['winners']} when replayed"
        )
    return ReplayReport(len(hands), moves, final, finished, seeded, raw, recorder)


def _reset(raw: Any, seed: int | None, options: dict[str, Any], k: int) -> None:
    try:
        raw.reset(seed=seed, options=options)
    except ValueError as exc:
        raise RecordMismatch(f"hand {k}: the env refuses the recorded deal: {exc}") from None


def _seed_deal(record: dict[str, Any], k: int) -> tuple[int, ...] | None:
    """The first deal the record's seed gives in this block-env (for the report only)."""
    probe = make_env(record)
    probe.reset(seed=record["seed"])
    return tuple(probe.game.hands)
