"""The sandboxed process that only runs forwards, and the protocol it speaks with the judge."""
