"""The one exception type for user mistakes.

Anything raised as UserError is the user's input being wrong (a scenario file, a CLI value,
a trace or a submission); the CLI turns it into one line on stderr and exit status 2.  Every
other exception is a bug in kstep and must fail loudly (the CLI: its traceback and exit status 70).
``Invalid`` never reaches the edge: a schema raises it, and whoever read the file turns it into a
UserError that names the file.
"""


class UserError(Exception):
    """A mistake in what the user gave us, explained in one line."""


def shorten(text: str, limit: int = 200) -> str:
    """What the user gave, cut to fit in a one-line message (a 5000-digit number is not repeated)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Invalid(Exception):
    """A schema violation; the loader adds the file name and raises UserError."""


def number_text(v: int) -> str:
    """An integer as text; one too long for Python to print (over 4300 digits) by its size."""
    if v.bit_length() <= 256:
        return str(v)
    return f"{'-' if v < 0 else ''}a {v.bit_length()}-bit number"
