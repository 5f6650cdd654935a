"""kernelskill: verified, faster Triton replacements for PyTorch modules."""
