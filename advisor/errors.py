"""The one exception the CLI turns into a single line on stderr and exit code 2."""


class InputError(ValueError):
    """Bad input from the user: the message is one complete sentence that says what to change."""
