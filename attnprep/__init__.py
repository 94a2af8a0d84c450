"""attnprep: a trainer for the hand-write-attention questions of LLM engineering interviews."""

__version__ = "0.1.0"


def check(target, exercise=None, **options):
    """Grade an attempt from Python or a notebook and show its report; see
    :func:`attnprep.notebook.check` (``attnprep.check("mha")`` grades the notebook's own
    ``MultiHeadAttention``; ``attnprep.check(source, exercise="mha")`` a string of code)."""
    from attnprep import notebook

    return notebook.check(target, exercise, **options)


def load_ipython_extension(ipython) -> None:
    """``%load_ext attnprep``: the ``%attnprep`` / ``%%attnprep`` magics (attnprep.notebook)."""
    from attnprep import notebook

    notebook.load(ipython)
