"""LSTM unrolled by hand: one input-projection GEMM, then a time loop of h @ W_hh + gates -> (B, T, H)."""

import torch
import torch.nn as nn

BATCH = 48
SEQ = 200
INPUT_SIZE = 384
HIDDEN = 768
SMALL = {"BATCH": 3, "SEQ": 7, "INPUT_SIZE": 10, "HIDDEN": 12}


class Model(nn.Module):
    def __init__(self, input_size, hidden):
        super().__init__()
        self.hidden = hidden
        self.w_ih = nn.Linear(input_size, 4 * hidden)
        self.w_hh = nn.Linear(hidden, 4 * hidden, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        x_proj = self.w_ih(x)
        h = x.new_zeros(b, self.hidden)
        c = x.new_zeros(b, self.hidden)
        outputs = []
        for step in range(t):
            gates = x_proj[:, step] + self.w_hh(h)
            i, f, g, o = gates.chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1)


def get_inputs():
    return [torch.randn(BATCH, SEQ, INPUT_SIZE)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN]
