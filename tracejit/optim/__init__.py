"""Optimizers as pure functions, so that a whole training step runs inside one jitted function:

    opt = Adam(lr=1e-3)
    state = opt.init(params)
    params, state = opt.update(grads, state, params)    # inside @jit, with grads from grad()

``params`` may be any pytree of arrays, an ``nn.Module`` included. The updates are PyTorch's
(torch.optim's single-tensor loops), one module per optimizer; learning-rate schedules come
as pure functions of the update count (schedules.py) and with torch's scheduler interface
(lr_scheduler.py), both changing the rate without tracing again (hyperparameters.py).

Where this differs from torch.optim:

- torch skips a parameter whose ``.grad`` is None; tracejit.grad gives zeros for a parameter
  the loss does not use, so its weight decay and momentum still move it, as with torch's
  zeroed (``set_to_none=False``) gradients. Label it None in a ParamGroups to freeze it.
- Parameter groups are ParamGroups: one optimizer per label of a leaf's path.
- Hyperparameters other than the learning rate are constants of the trace: changing one
  traces the step again.
- The state's step counter is a float32 0-d array, as torch's ``state["step"]`` tensor.
"""
from . import lr_scheduler, schedules
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .lr_scheduler import (CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LRScheduler,
                           MultiStepLR, OneCycleLR, StepLR)
from .param_groups import ParamGroups
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam",
           "ParamGroups", "schedules", "lr_scheduler", "LRScheduler", "StepLR", "MultiStepLR",
           "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "LinearLR", "OneCycleLR"]
