"""The MuJoCo agents' MLPs as K networks at once, with their backward pass written out.

``stacked_mlp(x, params, activation)``: ``x`` ``[K, B, in]``, ``params`` the weights ``[K, out,
in]`` (torch's layout) and biases ``[K, out]`` of each layer in turn; run k's rows are run k's
network on ``x[k]``. A lone agent is a stack of one (``MLPAgent``: ``K = 1``, the same kernels).

Why a backward of its own: a small MLP's update is bound by per-operation cost. Autograd records
about 20 operations per layer for a stacked Linear + tanh and runs each as its own node; this
backward is the textbook one (``dW = g^T h``, ``db = sum g``, ``dh = g W``, times the
activation's derivative), with each weight gradient's product taken in whichever orientation
is the faster kernel (``(h^T g)^T`` for a narrow input: 22 against 88 us for the first layer of
a stack of 12 Hopper networks on one CPU thread). Second derivatives (TRPO's Fisher-vector
products: ``create_graph=True``) recompute the forward with torch's differentiable operations
and let autograd take the gradient (``_forward(..., differentiable=True)``).

Why tanh through the logistic function: ``torch.tanh`` on the CPU (torch 2.13) costs ~125 us on a
``[12, 64, 64]`` tensor, ``torch.sigmoid`` ~21 us; ``tanh(z) = 2 sigmoid(2z) - 1`` to 1.8e-7
absolute (float32; ``torch.tanh`` 3e-8), its derivative ``1 - tanh(z)^2`` as before.

Bitwise the same for run k whatever K and whichever runs share the stack (forward and backward;
tests/test_invariance.py, tests/test_stacked_mlp.py): every kernel here gives run k's slice the bits
of the lone product, checked on this CPU for K up to 16, one thread:

- a Linear layer of output width 1 (the value head; a one-action policy) is an elementwise
  product summed over the input (``baddbmm`` of width 1 takes another kernel for K >= 2 than for
  K = 1: ~1e-6 apart); its weight gradient likewise sums elementwise products over the rows;
- an output of width 2-8 (the policy heads) is ``(W h^T)^T`` (forward ~21 against ~60 us in
  ``baddbmm`` for Hopper's 3-wide head on a stack of 12), except for a single row, where
  ``baddbmm`` is the invariant kernel;
- the elementwise activations see whole SIMD blocks only when a run's slice of a hidden layer
  is a multiple of 32 floats (any hidden width that is a multiple of 32, as the paper's 64): a
  tensor's last partial block takes the scalar path, whose last bits differ.
"""
from __future__ import annotations

import torch
from torch import Tensor

ACTIVATIONS = ("tanh", "relu")
NARROW_OUTPUT = 8   # output widths 2..NARROW_OUTPUT are computed as (W h^T)^T


def linear(h: Tensor, weight: Tensor, bias: Tensor, narrow: bool = True) -> Tensor:
    """K Linear layers at once: ``h`` ``[K, B, in]``, ``weight`` ``[K, out, in]``, ``bias`` ``[K, out]``.
    ``narrow=False``: ``baddbmm`` also for outputs of width 2..``NARROW_OUTPUT`` (what autograd
    differentiates twice; see ``StackedMLP.backward``)."""
    out = weight.shape[1]
    if out == 1:
        return (h * weight).sum(-1, keepdim=True) + bias.unsqueeze(1)
    if narrow and out <= NARROW_OUTPUT and h.shape[1] > 1:
        return torch.bmm(weight, h.transpose(1, 2)).transpose(1, 2) + bias.unsqueeze(1)
    return torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))


def _activate(z: Tensor, activation: str, differentiable: bool) -> Tensor:
    """The activation; in place on a fresh pre-activation unless ``differentiable`` (the same numbers)."""
    if activation == "tanh":
        return torch.sigmoid(z * 2) * 2 - 1 if differentiable else torch.sigmoid(z.mul_(2), out=z).mul_(2).sub_(1)
    return torch.relu(z) if differentiable else z.relu_()


def _activation_backward(grad: Tensor, out: Tensor, activation: str) -> Tensor:
    """The gradient at the pre-activation from the gradient at the output ``out``."""
    if activation == "tanh":
        return torch.ops.aten.tanh_backward(grad, out)        # grad * (1 - out^2)
    return torch.ops.aten.threshold_backward(grad, out, 0)   # grad where out > 0


def _forward(x: Tensor, params: tuple[Tensor, ...], activation: str, differentiable: bool = False):
    """The output and each layer's input (``x``, then the hidden activations). ``differentiable``:
    through torch's differentiable operations, ``baddbmm`` for every output wider than 1, for
    autograd to differentiate twice: the kernels its second derivatives then take give each run the
    same bits at any K (tests/test_invariance.py's TRPO runs)."""
    inputs, h = [x], x
    last = len(params) // 2 - 1
    for i in range(last + 1):
        h = linear(h, params[2 * i], params[2 * i + 1], narrow=not differentiable)
        if i < last:
            h = _activate(h, activation, differentiable)
            inputs.append(h)
    return h, inputs


def _backward(grad: Tensor, inputs: list[Tensor], params: tuple[Tensor, ...], activation: str,
              input_grad: bool) -> list[Tensor | None]:
    """The gradients of the input and of every parameter, from the output's gradient."""
    grads: list[Tensor | None] = [None] * (len(params) + 1)
    for i in reversed(range(len(params) // 2)):
        weight, h = params[2 * i], inputs[i]
        out, width = weight.shape[1], weight.shape[2]
        if out == 1:
            grads[1 + 2 * i] = (grad * h).sum(1, keepdim=True)
        elif width < out:
            grads[1 + 2 * i] = torch.bmm(h.transpose(1, 2), grad).transpose(1, 2).contiguous()
        else:
            grads[1 + 2 * i] = torch.bmm(grad.transpose(1, 2), h)
        grads[2 + 2 * i] = grad.sum(1)
        if i > 0 or input_grad:
            grad_h = grad * weight if out == 1 else torch.bmm(grad, weight)
            grad = _activation_backward(grad_h, h, activation) if i > 0 else grad_h
    if input_grad:
        grads[0] = grad
    return grads


class StackedMLP(torch.autograd.Function):
    """``stacked_mlp`` as one autograd node (see the module docstring)."""

    @staticmethod
    def forward(ctx, activation: str, x: Tensor, *params: Tensor) -> Tensor:
        out, inputs = _forward(x, params, activation)
        ctx.activation, ctx.layers = activation, len(inputs)
        ctx.save_for_backward(*inputs, *params)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        saved = ctx.saved_tensors
        inputs, params = list(saved[:ctx.layers]), saved[ctx.layers:]
        if torch.is_grad_enabled():
            # create_graph (TRPO's Fisher-vector products): the gradient as autograd takes it,
            # through the same network in differentiable operations, so that it can be
            # differentiated again
            x, wanted = inputs[0], list(params)
            if ctx.needs_input_grad[1]:
                wanted.insert(0, x)
            out, _ = _forward(x, params, ctx.activation, differentiable=True)
            grads = torch.autograd.grad(out, wanted, grad, create_graph=True)
            return (None, *([] if ctx.needs_input_grad[1] else [None]), *grads)
        # contiguous: the products below then see one layout whatever the loss made of the output
        # (a broadcast gradient is strided), and their kernels were checked for that layout
        grads = _backward(grad.contiguous(), inputs, params, ctx.activation, ctx.needs_input_grad[1])
        return (None, *grads)


def stacked_mlp(x: Tensor, params: list[Tensor], activation: str) -> Tensor:
    """K MLPs on ``x`` ``[K, B, in]``: ``params`` = ``[w_1, b_1, w_2, b_2, ...]`` of ``[K, out, in]``
    and ``[K, out]``; ``activation`` between the layers (``ACTIVATIONS``); returns ``[K, B, out]``."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; valid: {', '.join(ACTIVATIONS)}")
    return StackedMLP.apply(activation, x, *params)
