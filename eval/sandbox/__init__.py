"""The OS layers around every child process, and the signature on its result."""
