"""Measuring a forward: the timing protocol both processes follow, speed of light, GPU ceilings."""
