"""Elementwise optimizer steps on logit slots, matching torch.optim.AdamW and torch.optim.SGD.

The step is applied to views of growing slot arrays (a group's slot count grows as tokens are drawn), which
torch.optim cannot hold; elementwise updates make that growth free. AdamW uses torch's fused CPU kernel (the one
behind ``torch.optim.AdamW(fused=True)``: one pass instead of nine). ``dz`` receives the change of z, for the
first-order dQ_pos.
"""

from __future__ import annotations

import torch

from .spec import OptimizerSpec

_STEP = torch.zeros((), dtype=torch.float64)


def _step_tensor(step: int) -> torch.Tensor:
    """The fused kernel reads the step count from a tensor; refilling one avoids an allocation per step."""
    return _STEP.fill_(float(step))


def optimizer_step(
    opt: OptimizerSpec,
    step: int,
    z: torch.Tensor,
    grad: torch.Tensor,
    m: torch.Tensor,
    v: torch.Tensor,
    dz: torch.Tensor,
) -> None:
    """Apply update number ``step`` (1-based) in place to z; m, v are AdamW's moments (unused by SGD)."""
    if opt.name == "sgd":
        # torch.optim.SGD without momentum: weight decay is coupled (added to the gradient).
        torch.mul(grad, -opt.lr, out=dz)
        if opt.weight_decay:
            dz.add_(z, alpha=-opt.lr * opt.weight_decay)
        z.add_(dz)
        return
    dz.copy_(z)
    torch._fused_adamw_(
        [z],
        [grad],
        [m],
        [v],
        [],
        [_step_tensor(step)],
        lr=opt.lr,
        beta1=opt.betas[0],
        beta2=opt.betas[1],
        weight_decay=opt.weight_decay,
        eps=opt.eps,
        amsgrad=False,
        maximize=False,
    )
    torch.sub(z, dz, out=dz)
