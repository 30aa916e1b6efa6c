"""Progress for long snnc calls: a one-line bar on a terminal, nothing in logs or captured output."""
import sys
import time


class Bar:
    """A tqdm-like line on stderr: label, bar, done/total, rate, elapsed. Redrawn at most 10 times a second."""

    def __init__(self, label, stream=None):
        self.label = label
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def __call__(self, done, total, stage=""):
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        width = 28
        filled = int(width * done / total) if total > 0 else width
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        text = f"\r{self.label}: |{'#' * filled}{'.' * (width - filled)}| {done}/{total} [{elapsed:.0f} s, {rate:.1f}/s]"
        if stage and stage != self.label:
            text += f" {stage}"[:60]
        self.stream.write(text + "\033[K")
        self.stream.flush()
        self.drawn = True
        if done >= total:
            self.stream.write("\n")
            self.drawn = False


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def resolve(progress, label):
    """What a call's `progress` argument means: None = a bar when stderr is a terminal (so batch jobs and
    notebooks' captured logs stay clean), True = a bar, False = nothing, a callable(done, total, stage)
    = that. Returns a callable or None."""
    if progress is None:
        return Bar(label) if _is_terminal(sys.stderr) else None
    if progress is True:
        return Bar(label)
    if progress is False:
        return None
    if callable(progress):
        return progress
    raise TypeError(f"progress: expected None, True, False or a callable(done, total, stage), got {progress!r}")
