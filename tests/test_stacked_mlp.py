"""The MuJoCo agents' stacked MLP (suites/stacked_mlp.py) against the naive one, run by run.

The reference is each run's network as torch's own layers compute it (``F.linear``, ``torch.tanh``
or ``torch.relu``), differentiated by autograd, in float64: the stacked kernels (their own
backward, tanh through the logistic function) must give the same numbers to float32 precision,
the same second derivatives (TRPO), and each run's numbers bit for bit whatever the stack."""
import pytest
import torch
from torch.nn import functional as F

from algos.stack import StackedAdam
from suites.stacked_mlp import stacked_mlp

# (input width, hidden widths, output width): the paper's networks (Hopper's policy and value),
# a one-action policy, the widest MuJoCo input (Humanoid-sized) and the widest narrow output
SHAPES = [(11, (64, 64), 3), (11, (64, 64), 1), (376, (64, 64), 8), (5, (32,), 2), (17, (64, 64), 17)]


def _params(K, n_in, hidden, n_out, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    sizes = [n_in, *hidden, n_out]
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [torch.randn(K, b, a, generator=g, dtype=dtype) / a ** 0.5, torch.randn(K, b, generator=g, dtype=dtype) * 0.1]
    return [p.requires_grad_() for p in params]


def _reference(x, params, activation):
    """Run by run with torch's layers: ``[K, B, out]``."""
    act = torch.tanh if activation == "tanh" else torch.relu
    outs = []
    for k in range(x.shape[0]):
        h = x[k]
        for i in range(0, len(params), 2):
            h = F.linear(h, params[i][k], params[i + 1][k])
            if i < len(params) - 2:
                h = act(h)
        outs.append(h)
    return torch.stack(outs)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}-{'x'.join(map(str, s[1]))}-{s[2]}")
def test_forward_and_gradients_are_the_naive_networks(shape, activation):
    n_in, hidden, n_out = shape
    K, B = 3, 64
    params = _params(K, n_in, hidden, n_out)
    x = torch.randn(K, B, n_in, requires_grad=True)
    grad_out = torch.randn(K, B, n_out)
    out = stacked_mlp(x, params, activation)
    grads = torch.autograd.grad(out, [x, *params], grad_out)
    params64 = [p.detach().double().requires_grad_() for p in params]
    x64 = x.detach().double().requires_grad_()
    ref = _reference(x64, params64, activation)
    ref_grads = torch.autograd.grad(ref, [x64, *params64], grad_out.double())
    assert out.shape == (K, B, n_out)
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_second_derivatives_are_autograds(activation):
    # TRPO's Fisher-vector products differentiate the gradient (create_graph=True)
    torch.manual_seed(0)
    params = _params(2, 4, (5, 3), 2, dtype=torch.float64)
    x = torch.randn(2, 6, 4, dtype=torch.float64)
    assert torch.autograd.gradgradcheck(lambda *p: stacked_mlp(x, list(p), activation), params)
    # a Hessian-vector product of a scalar loss, against the naive network's
    v = [torch.randn_like(p) for p in params]

    def hvp(forward):
        loss = (forward(x, params, activation) ** 2).sum()
        grads = torch.autograd.grad(loss, params, create_graph=True)
        return torch.autograd.grad(sum((g * u).sum() for g, u in zip(grads, v)), params)
    for got, want in zip(hvp(stacked_mlp), hvp(_reference)):
        torch.testing.assert_close(got, want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("rows", [1, 7, 64, 2048])
@pytest.mark.parametrize("shape", SHAPES[:3], ids=lambda s: f"{s[0]}-{'x'.join(map(str, s[1]))}-{s[2]}")
def test_each_runs_numbers_are_the_same_bits_in_any_stack(shape, rows):
    n_in, hidden, n_out = shape
    full = 16
    params = _params(full, n_in, hidden, n_out)
    x = torch.randn(full, rows, n_in)
    grad_out = torch.randn(full, rows, n_out)
    out = stacked_mlp(x, params, "tanh")
    grads = torch.autograd.grad(out, params, grad_out)
    for K in (1, 2, 5, 12):
        part = [p.detach()[:K].clone().requires_grad_() for p in params]
        out_k = stacked_mlp(x[:K].clone(), part, "tanh")
        assert torch.equal(out_k, out[:K])
        for g_k, g in zip(torch.autograd.grad(out_k, part, grad_out[:K].clone()), grads):
            assert torch.equal(g_k, g[:K])


def test_stacked_adam_gives_a_run_the_same_bits_alone_and_in_any_stack():
    # the fused kernel steps the leaves of runs that share a rate and a step count at once, the
    # others row by row: a run's parameters are the same bits either way, and alone
    g = torch.Generator().manual_seed(0)
    K, shapes = 4, [(64, 11), (64,), (3, 64), (3,), (1,), (6,)]
    start = [torch.zeros(K, *s) for s in shapes]
    grads = [[torch.randn(K, *s, generator=g) * 10 ** (4 * torch.rand(1, generator=g).item() - 3) for s in shapes]
             for _ in range(200)]

    def train(runs, lrs):
        leaves = [t[runs].clone().requires_grad_() for t in start]
        opts = [torch.optim.Adam([torch.zeros(s) for s in shapes], lr=lr, eps=1e-5) for lr in lrs]
        adam = StackedAdam(leaves, [(o, o.param_groups[0]["params"]) for o in opts])
        for g in grads:
            for leaf, gi in zip(leaves, g):
                leaf.grad = gi[runs].clone()
            adam.step()
        return [leaf.detach() for leaf in leaves]
    together = train(list(range(K)), [3e-4] * K)                    # one group: whole leaves
    mixed = train(list(range(K)), [3e-4, 1e-3, 3e-4, 1e-3])   # two groups: rows
    for k in range(K):
        alone = train([k], [3e-4 if k % 2 == 0 else 1e-3])
        for a, t in zip(alone, mixed):
            assert torch.equal(a[0], t[k])
        if k % 2 == 0:
            for a, t in zip(alone, together):
                assert torch.equal(a[0], t[k])


def test_an_unknown_activation_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="tanh, relu"):
        stacked_mlp(torch.zeros(1, 1, 2), _params(1, 2, (3,), 1), "gelu")
