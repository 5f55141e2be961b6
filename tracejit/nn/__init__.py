"""Models: ``tracejit.nn.functional`` (PyTorch's functions), ``Module`` and layers."""
from . import functional
from .layers import (GELU, AvgPool2d, BCEWithLogitsLoss, Conv2d, CrossEntropyLoss, Dropout,
                     Embedding, Flatten, Identity, LayerNorm, Linear, LogSoftmax, MaxPool2d,
                     MSELoss, NLLLoss, ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .module import Module, ModuleDict, ModuleList

__all__ = ["functional", "Module", "ModuleList", "ModuleDict", "Linear", "Conv2d", "ReLU",
           "GELU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Identity", "Flatten",
           "MaxPool2d", "AvgPool2d", "Dropout", "LayerNorm", "Sequential", "CrossEntropyLoss",
           "NLLLoss", "MSELoss", "BCEWithLogitsLoss", "Embedding"]
