"""Models: ``tracejit.nn.functional`` (PyTorch's functions), ``Module`` and layers."""
from . import functional
from .layers import (GELU, Conv2d, Dropout, Flatten, LayerNorm, Linear, MaxPool2d, ReLU,
                     Sequential, Sigmoid, Tanh)
from .module import Module, ModuleList

__all__ = ["functional", "Module", "ModuleList", "Linear", "Conv2d", "ReLU", "GELU", "Tanh", "Sigmoid",
           "Flatten", "MaxPool2d", "Dropout", "LayerNorm", "Sequential"]
