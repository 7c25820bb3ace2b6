"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: bayesiains' nflows (rational-quadratic spline coupling: a searchsorted by a sum of
comparisons, in-place writes into cumsums that need their gradient, bool-masked reads and writes of a tuple of
outputs); princeton-vl's RAFT (an all-pairs correlation pyramid, lookups by grid_sample with align_corners=True,
convex upsampling by F.unfold, a gamma-weighted sequence loss); nianticlabs' monodepth2 (backprojection and
projection by matmul with Parameters that need no grad, in-place divisions of a permuted view, axis-angle rotations
written element by element, SSIM by AvgPool2d and ReflectionPad2d, automasking by torch.min over a cat); NVIDIA's
partialconv (a Conv2d subclass that updates a mask by F.conv2d under no_grad); yashbhalgat's HashNeRF (multiresolution
hash encoding by XOR of int32 products that wrap). Each runs in tnet, then in torch from tnet's initial weights
(state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy draws what a
script draws; shapes are tiny and runs take one or two steps."""
import math

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# (a) bayesiains/nflows (nflows/transforms/splines/rational_quadratic.py, nflows/utils/torchutils.py's searchsorted,
# nflows/transforms/coupling.py's PiecewiseRationalQuadraticCouplingTransform): softmax widths and heights with a
# minimum, cumsum then F.pad(pad=(1, 0)), cumwidths[..., 0] = left written in place into a tensor that needs grad,
# unnormalized_derivatives padded and its ends overwritten by a constant, outputs[mask], logabsdet[mask] = spline(...)
# on inputs[mask] and params[mask, :], gather(-1, bin_idx)[..., 0], the inverse's quadratic root; a coupling layer
# by a binary mask's index lists, a standard normal base, -log_prob.mean() and Adam, then the inverse round trip
def nflows_rq_spline(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    DEFAULT_MIN_BIN_WIDTH = DEFAULT_MIN_BIN_HEIGHT = DEFAULT_MIN_DERIVATIVE = 1e-3

    def searchsorted(bin_locations, inputs, eps=1e-6):
        bin_locations[..., -1] += eps
        return torch.sum(inputs[..., None] >= bin_locations, dim=-1) - 1

    def unconstrained_rational_quadratic_spline(inputs, unnormalized_widths, unnormalized_heights,
                                                unnormalized_derivatives, inverse=False, tails="linear",
                                                tail_bound=1.0, min_bin_width=DEFAULT_MIN_BIN_WIDTH,
                                                min_bin_height=DEFAULT_MIN_BIN_HEIGHT,
                                                min_derivative=DEFAULT_MIN_DERIVATIVE):
        inside_interval_mask = (inputs >= -tail_bound) & (inputs <= tail_bound)
        outside_interval_mask = ~inside_interval_mask
        outputs = torch.zeros_like(inputs)
        logabsdet = torch.zeros_like(inputs)
        if tails == "linear":
            unnormalized_derivatives = F.pad(unnormalized_derivatives, pad=(1, 1))
            constant = np.log(np.exp(1 - min_derivative) - 1)
            unnormalized_derivatives[..., 0] = constant
            unnormalized_derivatives[..., -1] = constant
            outputs[outside_interval_mask] = inputs[outside_interval_mask]
            logabsdet[outside_interval_mask] = 0
        else:
            raise RuntimeError("{} tails are not implemented.".format(tails))
        if torch.any(inside_interval_mask):
            (outputs[inside_interval_mask], logabsdet[inside_interval_mask]) = rational_quadratic_spline(
                inputs=inputs[inside_interval_mask],
                unnormalized_widths=unnormalized_widths[inside_interval_mask, :],
                unnormalized_heights=unnormalized_heights[inside_interval_mask, :],
                unnormalized_derivatives=unnormalized_derivatives[inside_interval_mask, :],
                inverse=inverse, left=-tail_bound, right=tail_bound, bottom=-tail_bound, top=tail_bound,
                min_bin_width=min_bin_width, min_bin_height=min_bin_height, min_derivative=min_derivative)
        return outputs, logabsdet

    def rational_quadratic_spline(inputs, unnormalized_widths, unnormalized_heights, unnormalized_derivatives,
                                  inverse=False, left=0.0, right=1.0, bottom=0.0, top=1.0,
                                  min_bin_width=DEFAULT_MIN_BIN_WIDTH, min_bin_height=DEFAULT_MIN_BIN_HEIGHT,
                                  min_derivative=DEFAULT_MIN_DERIVATIVE):
        if torch.min(inputs) < left or torch.max(inputs) > right:
            raise ValueError("Input to a transform is not within its domain")
        num_bins = unnormalized_widths.shape[-1]
        widths = F.softmax(unnormalized_widths, dim=-1)
        widths = min_bin_width + (1 - min_bin_width * num_bins) * widths
        cumwidths = torch.cumsum(widths, dim=-1)
        cumwidths = F.pad(cumwidths, pad=(1, 0), mode="constant", value=0.0)
        cumwidths = (right - left) * cumwidths + left
        cumwidths[..., 0] = left
        cumwidths[..., -1] = right
        widths = cumwidths[..., 1:] - cumwidths[..., :-1]
        derivatives = min_derivative + F.softplus(unnormalized_derivatives)
        heights = F.softmax(unnormalized_heights, dim=-1)
        heights = min_bin_height + (1 - min_bin_height * num_bins) * heights
        cumheights = torch.cumsum(heights, dim=-1)
        cumheights = F.pad(cumheights, pad=(1, 0), mode="constant", value=0.0)
        cumheights = (top - bottom) * cumheights + bottom
        cumheights[..., 0] = bottom
        cumheights[..., -1] = top
        heights = cumheights[..., 1:] - cumheights[..., :-1]
        if inverse:
            bin_idx = searchsorted(cumheights, inputs)[..., None]
        else:
            bin_idx = searchsorted(cumwidths, inputs)[..., None]
        input_cumwidths = cumwidths.gather(-1, bin_idx)[..., 0]
        input_bin_widths = widths.gather(-1, bin_idx)[..., 0]
        input_cumheights = cumheights.gather(-1, bin_idx)[..., 0]
        delta = heights / widths
        input_delta = delta.gather(-1, bin_idx)[..., 0]
        input_derivatives = derivatives.gather(-1, bin_idx)[..., 0]
        input_derivatives_plus_one = derivatives[..., 1:].gather(-1, bin_idx)[..., 0]
        input_heights = heights.gather(-1, bin_idx)[..., 0]
        if inverse:
            a = (inputs - input_cumheights) * (input_derivatives + input_derivatives_plus_one - 2 * input_delta) \
                + input_heights * (input_delta - input_derivatives)
            b = input_heights * input_derivatives - (inputs - input_cumheights) * (
                input_derivatives + input_derivatives_plus_one - 2 * input_delta)
            c = -input_delta * (inputs - input_cumheights)
            discriminant = b.pow(2) - 4 * a * c
            assert (discriminant >= 0).all()
            root = (2 * c) / (-b - torch.sqrt(discriminant))
            outputs = root * input_bin_widths + input_cumwidths
            theta_one_minus_theta = root * (1 - root)
            denominator = input_delta + ((input_derivatives + input_derivatives_plus_one - 2 * input_delta)
                                         * theta_one_minus_theta)
            derivative_numerator = input_delta.pow(2) * (input_derivatives_plus_one * root.pow(2)
                                                         + 2 * input_delta * theta_one_minus_theta
                                                         + input_derivatives * (1 - root).pow(2))
            logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
            return outputs, -logabsdet
        theta = (inputs - input_cumwidths) / input_bin_widths
        theta_one_minus_theta = theta * (1 - theta)
        numerator = input_heights * (input_delta * theta.pow(2) + input_derivatives * theta_one_minus_theta)
        denominator = input_delta + ((input_derivatives + input_derivatives_plus_one - 2 * input_delta)
                                     * theta_one_minus_theta)
        outputs = input_cumheights + numerator / denominator
        derivative_numerator = input_delta.pow(2) * (input_derivatives_plus_one * theta.pow(2)
                                                     + 2 * input_delta * theta_one_minus_theta
                                                     + input_derivatives * (1 - theta).pow(2))
        logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)
        return outputs, logabsdet

    class RQSCoupling(nn.Module):
        def __init__(self, mask, hidden=8, num_bins=4, tail_bound=2.0):
            super().__init__()
            mask = torch.as_tensor(mask)
            features_vector = torch.arange(len(mask))
            self.register_buffer("identity_features", features_vector.masked_select(mask <= 0))
            self.register_buffer("transform_features", features_vector.masked_select(mask > 0))
            self.num_bins, self.tail_bound, self.hidden = num_bins, tail_bound, hidden
            n_out = len(self.transform_features) * (num_bins * 3 - 1)
            self.net = nn.Sequential(nn.Linear(len(self.identity_features), hidden), nn.ReLU(),
                                     nn.Linear(hidden, n_out))

        def forward(self, inputs, inverse=False):
            identity_split = inputs[:, self.identity_features, ...]
            transform_split = inputs[:, self.transform_features, ...]
            transform_params = self.net(identity_split)
            b, d = transform_split.shape
            transform_params = transform_params.reshape(b, d, self.num_bins * 3 - 1)
            unnormalized_widths = transform_params[..., :self.num_bins] / np.sqrt(self.hidden)
            unnormalized_heights = transform_params[..., self.num_bins:2 * self.num_bins] / np.sqrt(self.hidden)
            unnormalized_derivatives = transform_params[..., 2 * self.num_bins:]
            transform_split, logabsdet = unconstrained_rational_quadratic_spline(
                transform_split, unnormalized_widths, unnormalized_heights, unnormalized_derivatives,
                inverse=inverse, tail_bound=self.tail_bound)
            outputs = torch.empty_like(inputs)
            outputs[:, self.identity_features, ...] = identity_split
            outputs[:, self.transform_features, ...] = transform_split
            return outputs, logabsdet.reshape(b, -1).sum(-1)

    flows = nn.ModuleList([RQSCoupling([1, 0, 1, 0]), RQSCoupling([0, 1, 0, 1])])
    init = load(m, flows, state)
    optimizer = torch.optim.Adam(flows.parameters(), lr=1e-2)
    base = torch.distributions.Normal(0.0, 1.0)
    losses = []
    for step in range(2):
        x = torch.tensor(normal(rng, 6, 4) * 1.5)  # some beyond the tail bound: the linear tails
        z, total = x, torch.zeros(x.shape[0])
        for flow in flows:
            z, logabsdet = flow(z)
            total = total + logabsdet
        loss = -(base.log_prob(z).sum(-1) + total).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    with torch.no_grad():
        z = x
        for flow in flows:
            z, _ = flow(z)
        back = z
        for flow in reversed(flows):
            back, _ = flow(back, inverse=True)
    losses += [z.sum().item(), (back - x).abs().max().item()]
    return init, losses + summary(flows.parameters())


def test_nflows_rq_spline():
    compare(nflows_rq_spline)
