"""Where a forward's GPU time goes (advice for the planner and the bench, never a verdict)."""
