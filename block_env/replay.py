"""Replay a game record: check it, list it, or turn it into an animated GIF.

    python -m block_env.replay game.json            # check it and list every move
    python -m block_env.replay game.json --check    # check only: one line; exit 1 on a mismatch
    python -m block_env.replay game.json --gif game.gif [--viewer SEAT] [--ms 700]
    python -m block_env.replay game.json --html game.html [--viewer SEAT]

Every form replays the record through the env (``block_env.records.replay``) and verifies
each move, each hand's result and the final scores; the first difference is reported in one
line naming the hand and move, with exit status 1. A file that is not a record, or a bad
option, exits with status 2. The GIF has one frame per move (the table after that move, as
``rendering.render_table`` draws it; ``--viewer`` shows only that seat's tiles face up).
The HTML page (``block_env.web.replay_page``) holds every position as SVG, the move list,
each hand's result and the match scores, and needs nothing else to be opened.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from block_env import rendering
from block_env.records import RecordError, RecordMismatch, load, move_action, replay

__all__ = ["frames", "listing", "main", "write_gif"]

PROG = "python -m block_env.replay"


def frames(record: dict[str, Any], viewer: int | None = None) -> list[np.ndarray]:
    """One picture per move of the record (the whole table after it), checking the record
    as it goes (RecordMismatch / RecordError as ``records.replay``)."""
    pictures: list[np.ndarray] = []
    recent: list[tuple[int, int]] = []
    labels = record.get("players")

    def snap(raw: Any, move: dict[str, Any] | None) -> None:
        if move is None:  # a new hand was dealt
            recent.clear()
            return
        recent.append((move["seat"], move_action(raw.config, move, "move")))
        info = raw.infos[raw.possible_agents[0]]
        state = raw.last_hand if info["hand_over"] else raw.game
        pictures.append(
            rendering.render_table(raw.config, state, viewer, list(recent), labels=labels)
        )

    replay(record, on_step=snap)
    return pictures


def write_gif(
    record: dict[str, Any], path: str | Path, viewer: int | None = None, ms: int = 700
) -> int:
    """Write the record as an animated GIF, one frame per move (the last one held longer);
    returns the number of frames. Needs pillow."""
    try:
        from PIL import Image
    except ImportError:
        raise RecordError("--gif needs pillow: pip install pillow") from None
    pictures = frames(record, viewer)
    if not pictures:
        raise RecordError("the record has no moves: there is nothing to draw")
    palette = _palette(Image)
    images = [
        Image.fromarray(p).quantize(palette=palette, dither=Image.Dither.NONE) for p in pictures
    ]
    durations = [ms] * (len(images) - 1) + [max(ms, 3000)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(
        path,
        save_all=True,
        append_images=images[1:],
        duration=durations,
        loop=0,
        optimize=False,
        disposal=1,
    )
    return len(images)


def _palette(image_module: Any) -> Any:
    """A palette image holding every colour the table picture uses (so no frame dithers)."""
    colours = sorted(
        {
            value
            for name, value in vars(rendering).items()
            if name.isupper() and isinstance(value, tuple) and len(value) == 3
            if all(isinstance(c, int) and 0 <= c <= 255 for c in value)
        }
    )
    flat = [c for colour in colours for c in colour]
    flat += flat[:3] * (256 - len(colours))
    pal = image_module.new("P", (1, 1))
    pal.putpalette(flat)
    return pal


def listing(record: dict[str, Any]) -> str:
    """The record as text: per hand its leader, deal, moves and result."""
    config = record["config"]
    labels = record.get("players") or []
    names = [
        f"player_{s}" + (f" ({labels[s]})" if s < len(labels) and labels[s] else "")
        for s in range(config["num_players"])
    ]
    out = [
        "Block, "
        + ", ".join(f"{k}={v}" for k, v in config.items())
        + f"; seed {record.get('seed')}"
    ]
    for k, hand in enumerate(record["hands"], 1):
        out.append(f"--- hand {k}: leader {names[hand['leader']]}, scores {hand['scores']}")
        for seat, tiles in enumerate(hand["deal"]):
            out.append(f"    {names[seat]}: " + " ".join(f"[{a}|{b}]" for a, b in tiles))
        for m, move in enumerate(hand["moves"], 1):
            if move.get("pass"):
                what = "passes"
            else:
                a, b = move["tile"]
                what = f"plays [{a}|{b}] on the {move['end']}"
            out.append(f"  {m:3d}. {names[move['seat']]} {what}")
        result = hand.get("result")
        if result is not None:
            if result["winner"] is None:
                how = "blocked, tied: nobody scores"
            else:
                verb = "wins the block" if result["blocked"] else "dominoes"
                how = f"{names[result['winner']]} {verb}, +{max(result['points'])}"
            out.append(f"  => {how}; pips left {result['pips']}; scores {result['scores']}")
    state = "finished" if record.get("finished") else "unfinished"
    out.append(f"Final scores {record['scores']} ({state})")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (0 ok, 1 mismatch, 2 bad file or option)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n")[0],
        epilog=f"example: {PROG} game.json --html game.html --viewer 0",
    )
    parser.add_argument("file", help="a game record (JSON) written by play, evaluate or records")
    parser.add_argument("--check", action="store_true", help="only check; print one line")
    parser.add_argument("--gif", metavar="OUT", help="write an animated GIF, one frame per move")
    parser.add_argument(
        "--html", metavar="OUT", help="write a self-contained page with every position"
    )
    parser.add_argument(
        "--viewer", type=int, default=None, help="with --gif/--html: only this seat's tiles"
    )
    parser.add_argument("--ms", type=int, default=700, help="with --gif: ms per frame")
    args = parser.parse_args(argv)
    if args.ms < 20:
        parser.error(f"--ms {args.ms}: use at least 20")
    try:
        record = load(args.file)
        n = record["config"].get("num_players", 2)
        if args.viewer is not None and not 0 <= args.viewer < n:
            parser.error(f"--viewer {args.viewer} is not a seat: use 0..{n - 1}")
        if args.gif:
            count = write_gif(record, args.gif, args.viewer, args.ms)
            print(f"{args.file}: ok; wrote {args.gif} ({count} frames, one per move)")
        if args.html:
            from block_env.web.replay_page import write_html

            count = write_html(record, args.html, args.viewer)
            print(f"{args.file}: ok; wrote {args.html} ({count} positions)")
        if args.gif or args.html:
            return 0
        report = replay(record)
    except RecordMismatch as exc:
        print(f"{PROG}: {args.file}: MISMATCH: {exc}", file=sys.stderr)
        return 1
    except RecordError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the output cannot be written
        print(f"{PROG}: error: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    if not args.check:
        print(listing(record))
    print(f"{args.file}: {report.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
