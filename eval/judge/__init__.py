"""The judge process: the reference, seeds, inputs, the comparison and the clock, out of the
candidate's reach."""
