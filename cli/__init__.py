"""The `kernelskill` commands: each parses its options, calls graph/, bench/, eval/ or skill_index/,
and prints."""
