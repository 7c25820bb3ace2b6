"""tnet.nn.utils.prune against torch.nn.utils.prune: the pruning tutorial's calls on a small LeNet, the
masks, the reparametrisation's names and hooks, training through the mask, remove, and the errors."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune as torch_prune

import tnet
import tnet.nn.utils.prune as prune


def lenet(lib):
    nn, F = lib.nn, lib.nn.functional

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3)
            self.conv2 = nn.Conv2d(4, 6, 3)
            self.fc1 = nn.Linear(6 * 2 * 2, 12)
            self.fc2 = nn.Linear(12, 5)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.relu(self.conv2(x))
            x = x.view(-1, int(x.nelement() / x.shape[0]))
            return self.fc2(F.relu(self.fc1(x)))
    return LeNet()


def pair():
    torch.manual_seed(0)
    ours, theirs = lenet(tnet), lenet(torch)
    ours.load_state_dict({k: tnet.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def masks(model):
    return {k: v.detach().numpy() if isinstance(v, torch.Tensor) else v.numpy()
            for k, v in model.state_dict().items() if k.endswith("_mask")}


def tutorial(lib, pr, model):
    """The pruning tutorial's calls: unstructured, then structured on the same tensor (a container),
    a count on the bias, each Linear by a loop over named_modules, then global pruning."""
    pr.l1_unstructured(model.conv1, name="weight", amount=0.3)
    pr.l1_unstructured(model.conv1, name="bias", amount=1)
    pr.ln_structured(model.conv1, name="weight", amount=0.5, n=2, dim=0)
    for _, module in model.named_modules():
        if isinstance(module, lib.nn.Linear):
            pr.l1_unstructured(module, name="weight", amount=0.4)
    pr.global_unstructured([(model.conv2, "weight"), (model.fc1, "weight"), (model.fc2, "weight")],
                           pruning_method=pr.L1Unstructured, amount=0.2)


def test_the_tutorials_pruning_as_torchs(rng, ieee):
    ours, theirs = pair()
    tutorial(tnet, prune, ours)
    tutorial(torch, torch_prune, theirs)
    assert [n for n, _ in ours.conv1.named_parameters()] == [n for n, _ in theirs.conv1.named_parameters()]
    assert [n for n, _ in ours.conv1.named_buffers()] == [n for n, _ in theirs.conv1.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours_masks, their_masks = masks(ours), masks(theirs)
    for name, mask in their_masks.items():
        np.testing.assert_array_equal(ours_masks[name], mask, err_msg=name)
    hook = next(h for h in ours.conv1._forward_pre_hooks.values() if h._tensor_name == "weight")
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2 and prune.is_pruned(ours)
    x = rng.standard_normal((3, 1, 10, 10)).astype(np.float32)
    out, ref = ours(tnet.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    out.square().sum().backward()
    ref.square().sum().backward()
    for name, p in theirs.named_parameters():  # the pruned entries' gradients are zero through the mask
        np.testing.assert_allclose(dict(ours.named_parameters())[name].grad.numpy(), p.grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)
    for model, pr in ((ours, prune), (theirs, torch_prune)):
        pr.remove(model.conv1, "weight")
    assert [n for n, _ in ours.conv1.named_parameters()] == [n for n, _ in theirs.conv1.named_parameters()]
    assert isinstance(ours.conv1.weight, tnet.nn.Parameter) and "weight_mask" not in dict(ours.conv1.named_buffers())
    np.testing.assert_array_equal(ours.conv1.weight.numpy(), theirs.conv1.weight.detach().numpy())


def test_random_methods_custom_masks_and_training(ieee):
    ours, _ = pair()
    prune.random_unstructured(ours.fc1, "weight", amount=0.25)
    assert int((ours.fc1.weight_mask == 0).sum().item()) == 72
    prune.random_structured(ours.conv2, "weight", amount=2, dim=0)
    per_channel = ours.conv2.weight_mask.numpy().reshape(6, -1).sum(1)
    assert sorted(per_channel.tolist()) == [0.0, 0.0] + [36.0] * 4
    mask = tnet.tensor((np.arange(5) % 2).astype(np.float32))
    prune.custom_from_mask(ours.fc2, "bias", mask)
    prune.identity(ours.conv1, "weight")
    assert ours.conv1.weight_mask.numpy().min() == 1.0
    optimizer = tnet.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        optimizer.zero_grad()
        ours(tnet.ones(2, 1, 10, 10)).sum().backward()
        optimizer.step()
    assert (ours.fc2.bias.numpy()[::2] == 0).all() and (ours.fc1.weight.numpy()[ours.fc1.weight_mask.numpy() == 0] == 0).all()
    x = tnet.tensor([-2.0, -0.5, 0.0, 1.0, 2.5, 3.0])
    np.testing.assert_array_equal(prune.L1Unstructured(amount=2).prune(x).numpy(), [-2, 0, 0, 1, 2.5, 3])


def test_errors_as_torchs():
    ours, theirs = pair()
    for model, pr in ((ours, prune), (theirs, torch_prune)):
        with pytest.raises(TypeError, match="Invalid type for amount"):
            pr.l1_unstructured(model.fc1, "weight", amount="a")
        with pytest.raises(ValueError, match="should either be a float"):
            pr.l1_unstructured(model.fc1, "weight", amount=1.5)
        with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
            pr.l1_unstructured(model.fc2, "bias", amount=6)
        assert [n for n, _ in model.fc2.named_parameters()] == ["weight", "bias"]  # a failed prune changes nothing
        with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional"):
            pr.ln_structured(model.fc2, "bias", amount=1, n=1, dim=0)
        with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
            pr.remove(model.fc2, "weight")
        with pytest.raises(TypeError, match="Only \"unstructured\""):
            pr.global_unstructured([(model.fc1, "weight")], pruning_method=pr.LnStructured, amount=1, n=2, dim=0)
