"""Two-layer GRU (nn.GRU, batch_first) over a sequence from a given initial state: returns outputs and h_n."""

import torch
import torch.nn as nn

BATCH = 32
SEQ = 128
INPUT_SIZE = 256
HIDDEN = 512
LAYERS = 2
SMALL = {"BATCH": 3, "SEQ": 7, "INPUT_SIZE": 10, "HIDDEN": 12}


class Model(nn.Module):
    def __init__(self, input_size, hidden, layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden, num_layers=layers, batch_first=True)

    def forward(self, x, h0):
        output, h_n = self.gru(x, h0)
        return output, h_n


def get_inputs():
    return [torch.randn(BATCH, SEQ, INPUT_SIZE), torch.randn(LAYERS, BATCH, HIDDEN)]


def get_init_inputs():
    return [INPUT_SIZE, HIDDEN, LAYERS]
