"""Errors a user can cause (bad config, busy or occupied run folder, unreadable checkpoint,
a run that diverged). ``train.py`` prints them as one line and exits with a status; every
other exception is a bug and keeps its traceback. Each also derives from the built-in type a
caller would expect (``ValueError``, ``FileExistsError``...)."""

from __future__ import annotations

from pathlib import Path


class TrainError(Exception):
    """Base of the errors ``train.py`` reports as one line; ``exit_status`` is its status."""

    exit_status = 2


class ConfigError(TrainError, ValueError):
    """A config key, value, file or override that is not allowed."""


class ConfigFileMissing(TrainError, FileNotFoundError):
    """The config file given on the command line does not exist."""


class RunExists(TrainError, FileExistsError):
    """The run folder already holds a run and neither --resume nor --force was given."""


class NothingToResume(TrainError, FileNotFoundError):
    """--resume without a checkpoint to continue from."""


class BadCheckpoint(TrainError, ValueError):
    """A checkpoint file that is not one ``train.py`` wrote, or is from another config."""


class RunLocked(TrainError, RuntimeError):
    """Another live process is training in the same run folder."""


class Diverged(TrainError, FloatingPointError):
    """A loss or weight became NaN or infinite; the last good checkpoint is kept."""

    exit_status = 1


class Interrupted(TrainError):
    """The run was stopped by SIGINT/SIGTERM after saving a checkpoint (exit status 130)."""

    exit_status = 130

    def __init__(self, signame: str, update: int, checkpoint: Path | None) -> None:
        self.signame, self.update, self.checkpoint = signame, update, checkpoint
        saved = f"checkpoint {checkpoint} saved" if checkpoint else "nothing saved"
        super().__init__(f"stopped by {signame} at update {update}: {saved}")


class PeerLost(TrainError):
    """Another rank died, or a collective waited past the timeout (exit status 1)."""

    exit_status = 1


class RankFailed(TrainError):
    """A user-caused error on some rank, as every rank sees it (the original's exit status)."""

    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status
