"""Models: ``tracejit.nn.functional`` (PyTorch's functions), ``Module`` and layers."""
from . import functional
from .layers import (GELU, AvgPool2d, BCEWithLogitsLoss, Conv1d, Conv2d, CrossEntropyLoss,
                     Dropout, Embedding, Flatten, Identity, Linear, LogSoftmax, MaxPool2d,
                     MSELoss, NLLLoss, ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .module import Module, ModuleDict, ModuleList
from .normalization_layers import (BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm2d,
                                   LayerNorm)
from .recurrent import GRUCell, LSTMCell, RNNCell

__all__ = ["functional", "Module", "ModuleList", "ModuleDict", "Linear", "Conv1d", "Conv2d",
           "ReLU", "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Identity", "Flatten",
           "MaxPool2d", "AvgPool2d", "Dropout", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
           "GroupNorm", "InstanceNorm2d", "Sequential", "CrossEntropyLoss", "NLLLoss",
           "MSELoss", "BCEWithLogitsLoss", "Embedding", "RNNCell", "GRUCell", "LSTMCell"]
