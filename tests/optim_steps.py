"""The harness of the optimizer tests that follow a transcription of torch's loop step by step
(test_optim_rmsprop_adagrad.py, test_optim_adam_variants.py): ``Steps`` holds the parameters,
the gradients of each step, the cases (name -> (optimizer, kwargs)) and the references, and
checks an optimizer against them eagerly, jitted, and against torch.optim where installed."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import tracejit
from tracejit import optim
from tracejit.tracer.pytree import flatten


def leaves(tree, dtype=np.float64):
    return [np.asarray(x, dtype) for x in flatten(tree)[0]]


@dataclass
class Steps:
    params: dict       # the starting parameters, float64
    grads: list        # one dict of gradients per step
    cases: dict        # case -> (optimizer name, kwargs)
    refs: dict         # optimizer name -> reference(params, grads_seq, **kwargs) -> history

    def run(self, opt, update, dtype):
        params = {k: v.astype(dtype) for k, v in self.params.items()}
        state = opt.init(params)
        history = []
        for g in self.grads:
            params, state = update({k: v.astype(dtype) for k, v in g.items()}, state, params)
            history.append(params)
        return history, state

    def _make(self, case):
        name, kwargs = self.cases[case]
        want = self.refs[name](leaves(self.params), [leaves(g) for g in self.grads], **kwargs)
        return getattr(optim, name)(**kwargs), want

    def check_float64(self, case):
        """Eager and jitted (on the interpreter: no compile) against the reference."""
        opt, want = self._make(case)
        jitted = tracejit.jit(opt.update, backend="interpreter")
        for update in (opt.update, jitted):
            history, state = self.run(opt, update, np.float64)
            for step, (got, ref) in enumerate(zip(history, want), start=1):
                for a, b in zip(leaves(got), ref):
                    np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13,
                                               err_msg=f"step {step}")
            assert float(state["step"]) == len(self.grads)
        assert jitted.trace_count == 1

    def check_float32_compiled(self, case, tol):
        """The compiled update stays float32 and follows eager and the reference."""
        opt, want = self._make(case)
        update = tracejit.jit(opt.update)
        history, _ = self.run(opt, update, np.float32)
        eager, _ = self.run(opt, opt.update, np.float32)
        for got, e, ref in zip(history, eager, want):
            for a, b, c in zip(flatten(got)[0], flatten(e)[0], ref):
                assert a.dtype == np.float32
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(a, c, rtol=tol, atol=tol)
        assert update.trace_count == 1

    def check_against_torch(self, case, dtype, tol32):
        torch = pytest.importorskip("torch")
        name, kwargs = self.cases[case]
        keys = sorted(self.params)
        tp = [torch.tensor(self.params[k].astype(dtype), requires_grad=True) for k in keys]
        # torch keeps NAdam's mu_product in its default dtype; tracejit's is float64
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64 if dtype == np.float64 else torch.float32)
        try:
            topt = getattr(torch.optim, name)(tp, **kwargs)
            opt = getattr(optim, name)(**kwargs)
            params = {k: v.astype(dtype) for k, v in self.params.items()}
            state = opt.init(params)
            tol = 1e-13 if dtype == np.float64 else tol32
            for step, g in enumerate(self.grads, start=1):
                for t, k in zip(tp, keys):
                    t.grad = torch.tensor(g[k].astype(dtype))
                topt.step()
                params, state = opt.update({k: v.astype(dtype) for k, v in g.items()},
                                           state, params)
                for t, k in zip(tp, keys):
                    assert params[k].dtype == dtype
                    np.testing.assert_allclose(params[k], t.detach().numpy(), rtol=tol,
                                               atol=tol, err_msg=f"{k}, step {step}")
        finally:
            torch.set_default_dtype(old)
