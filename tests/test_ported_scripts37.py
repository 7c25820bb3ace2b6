"""Public code the earlier files leave out, written from memory in its sources' styles and ported by its imports alone,
as test_ported_scripts.py: bayesiains' nflows (rational-quadratic spline coupling: a searchsorted by a sum of
comparisons, in-place writes into cumsums that need their gradient, bool-masked reads and writes of a tuple of
outputs); princeton-vl's RAFT (an all-pairs correlation pyramid, lookups by grid_sample with align_corners=True,
convex upsampling by F.unfold, a gamma-weighted sequence loss); nianticlabs' monodepth2 (backprojection and
projection by matmul, in-place divisions of a permuted view, which tnet refused until this file: the strided views
a written view was made from are now rebased as views of its dense base, as torch's; SSIM, automasking);
NVIDIA's partialconv (a Conv2d subclass updating a mask by F.conv2d under no_grad); yashbhalgat's HashNeRF
(multiresolution hash encoding by XOR of int32 products that wrap); SchNet (forces by autograd.grad with
create_graph=True, a loss through them); Informer (ProbSparse attention by advanced-index reads and writes,
circular Conv1d); dreamerv3-torch's distributions (a OneHotCategorical subclass reading super().logits, which tnet's
instance attributes hid until this file; KL balancing, twohot DiscDist, lambda returns); fairseq's wav2vec 2.0
(masking by a Parameter put at a bool mask, the Gumbel quantizer's hard codes, sampled negatives, cosine logits);
Graph U-Nets (gPool by topk, gUnpool by index_put); PyG's message passing by scatter_reduce and index_reduce_;
SlowFast (two pathways of Conv3d, a strided lateral connection). Each runs in tnet, then in torch from tnet's
initial weights (state_dict through numpy), and the losses, and the weights summed into a few numbers, agree. Numpy
draws what a script draws; shapes are tiny and runs take one or two steps."""

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


# (b) princeton-vl/RAFT (core/raft.py, core/corr.py's CorrBlock, core/update.py, core/utils/utils.py, train.py):
# an encoder called on a list of two images (torch.cat then torch.split by [batch_dim, batch_dim]), all-pairs
# correlation by matmul over the transposed flattened maps divided by torch.sqrt(torch.tensor(dim).float()), a
# pyramid by F.avg_pool2d, lookups around each pixel by torch.meshgrid(dy, dx) stacked with axis=-1 and
# bilinear_sampler (coords.split([1, 1], dim=-1), grid_sample with align_corners=True), coords_grid by meshgrid of
# aranges stacked reversed, a ConvGRU, convex upsampling (softmax over the 9 neighbours of F.unfold(8 * flow,
# [3, 3], padding=1), permute, reshape), sequence_loss with gamma ** (n - i - 1) and a valid mask, the epe metric
# by a bool index, AdamW with OneCycleLR(anneal_strategy='linear') and clip_grad_norm_
def raft(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(2)

    def bilinear_sampler(img, coords, mode="bilinear", mask=False):
        H, W = img.shape[-2:]
        xgrid, ygrid = coords.split([1, 1], dim=-1)
        xgrid = 2 * xgrid / (W - 1) - 1
        ygrid = 2 * ygrid / (H - 1) - 1
        grid = torch.cat([xgrid, ygrid], dim=-1)
        img = F.grid_sample(img, grid, align_corners=True)
        if mask:
            mask = (xgrid > -1) & (ygrid > -1) & (xgrid < 1) & (ygrid < 1)
            return img, mask.float()
        return img

    def coords_grid(batch, ht, wd, device):
        coords = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device), indexing="ij")
        coords = torch.stack(coords[::-1], dim=0).float()
        return coords[None].repeat(batch, 1, 1, 1)

    class CorrBlock:
        def __init__(self, fmap1, fmap2, num_levels=2, radius=1):
            self.num_levels = num_levels
            self.radius = radius
            self.corr_pyramid = []
            corr = CorrBlock.corr(fmap1, fmap2)
            batch, h1, w1, dim, h2, w2 = corr.shape
            corr = corr.reshape(batch * h1 * w1, dim, h2, w2)
            self.corr_pyramid.append(corr)
            for i in range(self.num_levels - 1):
                corr = F.avg_pool2d(corr, 2, stride=2)
                self.corr_pyramid.append(corr)

        def __call__(self, coords):
            r = self.radius
            coords = coords.permute(0, 2, 3, 1)
            batch, h1, w1, _ = coords.shape
            out_pyramid = []
            for i in range(self.num_levels):
                corr = self.corr_pyramid[i]
                dx = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
                dy = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
                delta = torch.stack(torch.meshgrid(dy, dx, indexing="ij"), axis=-1)
                centroid_lvl = coords.reshape(batch * h1 * w1, 1, 1, 2) / 2 ** i
                delta_lvl = delta.view(1, 2 * r + 1, 2 * r + 1, 2)
                coords_lvl = centroid_lvl + delta_lvl
                corr = bilinear_sampler(corr, coords_lvl)
                corr = corr.view(batch, h1, w1, -1)
                out_pyramid.append(corr)
            out = torch.cat(out_pyramid, dim=-1)
            return out.permute(0, 3, 1, 2).contiguous().float()

        @staticmethod
        def corr(fmap1, fmap2):
            batch, dim, ht, wd = fmap1.shape
            fmap1 = fmap1.view(batch, dim, ht * wd)
            fmap2 = fmap2.view(batch, dim, ht * wd)
            corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
            corr = corr.view(batch, ht, wd, 1, ht, wd)
            return corr / torch.sqrt(torch.tensor(dim).float())

    class Encoder(nn.Module):
        def __init__(self, output_dim, norm_fn="instance"):
            super().__init__()
            norm = (lambda c: nn.InstanceNorm2d(c)) if norm_fn == "instance" else (lambda c: nn.BatchNorm2d(c))
            self.layers = nn.Sequential(nn.Conv2d(3, 8, 7, stride=2, padding=3), norm(8), nn.ReLU(inplace=True),
                                        nn.Conv2d(8, 8, 3, stride=2, padding=1), norm(8), nn.ReLU(inplace=True),
                                        nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(inplace=True))
            self.conv2 = nn.Conv2d(8, output_dim, kernel_size=1)
            for mod in self.modules():
                if isinstance(mod, nn.Conv2d):
                    nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            is_list = isinstance(x, tuple) or isinstance(x, list)
            if is_list:
                batch_dim = x[0].shape[0]
                x = torch.cat(x, dim=0)
            x = self.conv2(self.layers(x))
            if is_list:
                x = torch.split(x, [batch_dim, batch_dim], dim=0)
            return x

    class ConvGRU(nn.Module):
        def __init__(self, hidden_dim, input_dim):
            super().__init__()
            self.convz = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)
            self.convr = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)
            self.convq = nn.Conv2d(hidden_dim + input_dim, hidden_dim, 3, padding=1)

        def forward(self, h, x):
            hx = torch.cat([h, x], dim=1)
            z = torch.sigmoid(self.convz(hx))
            r = torch.sigmoid(self.convr(hx))
            q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
            h = (1 - z) * h + z * q
            return h

    class UpdateBlock(nn.Module):
        def __init__(self, corr_planes, hidden_dim, context_dim):
            super().__init__()
            self.convc1 = nn.Conv2d(corr_planes, 8, 1, padding=0)
            self.convf1 = nn.Conv2d(2, 4, 7, padding=3)
            self.conv = nn.Conv2d(12, 6, 3, padding=1)
            self.gru = ConvGRU(hidden_dim, 6 + 2 + context_dim)
            self.flow_head = nn.Sequential(nn.Conv2d(hidden_dim, 8, 3, padding=1), nn.ReLU(inplace=True),
                                           nn.Conv2d(8, 2, 3, padding=1))
            self.mask = nn.Sequential(nn.Conv2d(hidden_dim, 8, 3, padding=1), nn.ReLU(inplace=True),
                                      nn.Conv2d(8, 64 * 9, 1, padding=0))

        def forward(self, net, inp, corr, flow):
            cor = F.relu(self.convc1(corr))
            flo = F.relu(self.convf1(flow))
            out = F.relu(self.conv(torch.cat([cor, flo], dim=1)))
            motion_features = torch.cat([out, flow], dim=1)
            inp = torch.cat([inp, motion_features], dim=1)
            net = self.gru(net, inp)
            delta_flow = self.flow_head(net)
            mask = .25 * self.mask(net)  # scale mask to balence gradients
            return net, mask, delta_flow

    class RAFT(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden_dim = hdim = 6
            self.context_dim = cdim = 4
            self.corr_levels, self.corr_radius = 2, 1
            self.fnet = Encoder(output_dim=8, norm_fn="instance")
            self.cnet = Encoder(output_dim=hdim + cdim, norm_fn="batch")
            self.update_block = UpdateBlock(self.corr_levels * (2 * self.corr_radius + 1) ** 2, hdim, cdim)

        def initialize_flow(self, img):
            N, C, H, W = img.shape
            coords0 = coords_grid(N, H // 8, W // 8, device=img.device)
            coords1 = coords_grid(N, H // 8, W // 8, device=img.device)
            return coords0, coords1

        def upsample_flow(self, flow, mask):
            N, _, H, W = flow.shape
            mask = mask.view(N, 1, 9, 8, 8, H, W)
            mask = torch.softmax(mask, dim=2)
            up_flow = F.unfold(8 * flow, [3, 3], padding=1)
            up_flow = up_flow.view(N, 2, 9, 1, 1, H, W)
            up_flow = torch.sum(mask * up_flow, dim=2)
            up_flow = up_flow.permute(0, 1, 4, 2, 5, 3)
            return up_flow.reshape(N, 2, 8 * H, 8 * W)

        def forward(self, image1, image2, iters=2):
            image1 = 2 * (image1 / 255.0) - 1.0
            image2 = 2 * (image2 / 255.0) - 1.0
            image1 = image1.contiguous()
            image2 = image2.contiguous()
            hdim, cdim = self.hidden_dim, self.context_dim
            fmap1, fmap2 = self.fnet([image1, image2])
            fmap1 = fmap1.float()
            fmap2 = fmap2.float()
            corr_fn = CorrBlock(fmap1, fmap2, num_levels=self.corr_levels, radius=self.corr_radius)
            cnet = self.cnet(image1)
            net, inp = torch.split(cnet, [hdim, cdim], dim=1)
            net = torch.tanh(net)
            inp = torch.relu(inp)
            coords0, coords1 = self.initialize_flow(image1)
            flow_predictions = []
            for itr in range(iters):
                coords1 = coords1.detach()
                corr = corr_fn(coords1)  # index correlation volume
                flow = coords1 - coords0
                net, up_mask, delta_flow = self.update_block(net, inp, corr, flow)
                coords1 = coords1 + delta_flow
                flow_up = self.upsample_flow(coords1 - coords0, up_mask)
                flow_predictions.append(flow_up)
            return flow_predictions

    def sequence_loss(flow_preds, flow_gt, valid, gamma=0.8, max_flow=400):
        n_predictions = len(flow_preds)
        flow_loss = 0.0
        mag = torch.sum(flow_gt ** 2, dim=1).sqrt()
        valid = (valid >= 0.5) & (mag < max_flow)
        for i in range(n_predictions):
            i_weight = gamma ** (n_predictions - i - 1)
            i_loss = (flow_preds[i] - flow_gt).abs()
            flow_loss += i_weight * (valid[:, None] * i_loss).mean()
        epe = torch.sum((flow_preds[-1] - flow_gt) ** 2, dim=1).sqrt()
        epe = epe.view(-1)[valid.view(-1)]
        metrics = {"epe": epe.mean().item(), "1px": (epe < 1).float().mean().item(),
                   "3px": (epe < 3).float().mean().item()}
        return flow_loss, metrics

    model = RAFT()
    init = load(m, model, state)
    model.train()
    optimizer = optim.AdamW(model.parameters(), lr=4e-4, weight_decay=1e-4, eps=1e-8)
    scheduler = optim.lr_scheduler.OneCycleLR(optimizer, 4e-4, 10, pct_start=0.05, cycle_momentum=False,
                                              anneal_strategy="linear")
    losses = []
    for step in range(2):
        image1 = torch.tensor(rng.uniform(0, 255, (2, 3, 32, 32)).astype(np.float32))
        image2 = torch.tensor(rng.uniform(0, 255, (2, 3, 32, 32)).astype(np.float32))
        flow = torch.tensor(normal(rng, 2, 2, 32, 32) * 3)
        flow[0, :, :4] = 500.0  # beyond max_flow: not valid
        valid = torch.tensor(rng.uniform(0, 1, (2, 32, 32)).astype(np.float32))
        optimizer.zero_grad()
        flow_predictions = model(image1, image2, iters=2)
        loss, metrics = sequence_loss(flow_predictions, flow, valid)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), metrics["epe"], metrics["3px"]]
    return init, losses + summary(model.parameters())


def test_raft():
    compare(raft)


# (c) nianticlabs/monodepth2 (layers.py's BackprojectDepth, Project3D, SSIM, transformation_from_parameters,
# rot_from_axisangle, get_translation_matrix, disp_to_depth, get_smooth_loss; trainer.py's generate_images_pred and
# compute_losses): np.meshgrid ids as nn.Parameter(requires_grad=False), torch.matmul(inv_K[:, :3, :3], pix_coords),
# P = torch.matmul(K, T)[:, :3, :], pix_coords[..., 0] /= self.width - 1 on a permuted view that needs grad,
# rot[:, 0, 0] = torch.squeeze(...) into zeros, T[:, :3, 3, None] = t, torch.norm(vec, 2, 2, True), the pose net's
# 0.01 * out.view(-1, 1, 1, 6), grid_sample with padding_mode="border", F.interpolate to the full size, dict outputs
# keyed by tuples, automasking by a noisy identity loss and torch.min over a cat (values and indices), the edge-aware
# smoothness with in-place *=, Adam and StepLR
def monodepth2(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    batch_size, height, width = 2, 8, 16

    class BackprojectDepth(nn.Module):
        def __init__(self, batch_size, height, width):
            super(BackprojectDepth, self).__init__()
            self.batch_size, self.height, self.width = batch_size, height, width
            meshgrid = np.meshgrid(range(self.width), range(self.height), indexing="xy")
            self.id_coords = np.stack(meshgrid, axis=0).astype(np.float32)
            self.id_coords = nn.Parameter(torch.from_numpy(self.id_coords), requires_grad=False)
            self.ones = nn.Parameter(torch.ones(self.batch_size, 1, self.height * self.width), requires_grad=False)
            self.pix_coords = torch.unsqueeze(torch.stack([self.id_coords[0].view(-1), self.id_coords[1].view(-1)],
                                                          0), 0)
            self.pix_coords = self.pix_coords.repeat(batch_size, 1, 1)
            self.pix_coords = nn.Parameter(torch.cat([self.pix_coords, self.ones], 1), requires_grad=False)

        def forward(self, depth, inv_K):
            cam_points = torch.matmul(inv_K[:, :3, :3], self.pix_coords)
            cam_points = depth.view(self.batch_size, 1, -1) * cam_points
            cam_points = torch.cat([cam_points, self.ones], 1)
            return cam_points

    class Project3D(nn.Module):
        def __init__(self, batch_size, height, width, eps=1e-7):
            super(Project3D, self).__init__()
            self.batch_size, self.height, self.width, self.eps = batch_size, height, width, eps

        def forward(self, points, K, T):
            P = torch.matmul(K, T)[:, :3, :]
            cam_points = torch.matmul(P, points)
            pix_coords = cam_points[:, :2, :] / (cam_points[:, 2, :].unsqueeze(1) + self.eps)
            pix_coords = pix_coords.view(self.batch_size, 2, self.height, self.width)
            pix_coords = pix_coords.permute(0, 2, 3, 1)
            pix_coords[..., 0] /= self.width - 1
            pix_coords[..., 1] /= self.height - 1
            pix_coords = (pix_coords - 0.5) * 2
            return pix_coords

    class SSIM(nn.Module):
        def __init__(self):
            super(SSIM, self).__init__()
            self.mu_x_pool = nn.AvgPool2d(3, 1)
            self.mu_y_pool = nn.AvgPool2d(3, 1)
            self.sig_x_pool = nn.AvgPool2d(3, 1)
            self.sig_y_pool = nn.AvgPool2d(3, 1)
            self.sig_xy_pool = nn.AvgPool2d(3, 1)
            self.refl = nn.ReflectionPad2d(1)
            self.C1 = 0.01 ** 2
            self.C2 = 0.03 ** 2

        def forward(self, x, y):
            x = self.refl(x)
            y = self.refl(y)
            mu_x = self.mu_x_pool(x)
            mu_y = self.mu_y_pool(y)
            sigma_x = self.sig_x_pool(x ** 2) - mu_x ** 2
            sigma_y = self.sig_y_pool(y ** 2) - mu_y ** 2
            sigma_xy = self.sig_xy_pool(x * y) - mu_x * mu_y
            SSIM_n = (2 * mu_x * mu_y + self.C1) * (2 * sigma_xy + self.C2)
            SSIM_d = (mu_x ** 2 + mu_y ** 2 + self.C1) * (sigma_x + sigma_y + self.C2)
            return torch.clamp((1 - SSIM_n / SSIM_d) / 2, 0, 1)

    def disp_to_depth(disp, min_depth, max_depth):
        min_disp = 1 / max_depth
        max_disp = 1 / min_depth
        scaled_disp = min_disp + (max_disp - min_disp) * disp
        depth = 1 / scaled_disp
        return scaled_disp, depth

    def rot_from_axisangle(vec):
        angle = torch.norm(vec, 2, 2, True)
        axis = vec / (angle + 1e-7)
        ca = torch.cos(angle)
        sa = torch.sin(angle)
        C = 1 - ca
        x = axis[..., 0].unsqueeze(1)
        y = axis[..., 1].unsqueeze(1)
        z = axis[..., 2].unsqueeze(1)
        xs, ys, zs = x * sa, y * sa, z * sa
        xC, yC, zC = x * C, y * C, z * C
        xyC, yzC, zxC = x * yC, y * zC, z * xC
        rot = torch.zeros((vec.shape[0], 4, 4)).to(device=vec.device)
        rot[:, 0, 0] = torch.squeeze(x * xC + ca)
        rot[:, 0, 1] = torch.squeeze(xyC - zs)
        rot[:, 0, 2] = torch.squeeze(zxC + ys)
        rot[:, 1, 0] = torch.squeeze(xyC + zs)
        rot[:, 1, 1] = torch.squeeze(y * yC + ca)
        rot[:, 1, 2] = torch.squeeze(yzC - xs)
        rot[:, 2, 0] = torch.squeeze(zxC - ys)
        rot[:, 2, 1] = torch.squeeze(yzC + xs)
        rot[:, 2, 2] = torch.squeeze(z * zC + ca)
        rot[:, 3, 3] = 1
        return rot

    def get_translation_matrix(translation_vector):
        T = torch.zeros(translation_vector.shape[0], 4, 4).to(device=translation_vector.device)
        t = translation_vector.contiguous().view(-1, 3, 1)
        T[:, 0, 0] = 1
        T[:, 1, 1] = 1
        T[:, 2, 2] = 1
        T[:, 3, 3] = 1
        T[:, :3, 3, None] = t
        return T

    def transformation_from_parameters(axisangle, translation, invert=False):
        R = rot_from_axisangle(axisangle)
        t = translation.clone()
        if invert:
            R = R.transpose(1, 2)
            t *= -1
        T = get_translation_matrix(t)
        if invert:
            M = torch.matmul(R, T)
        else:
            M = torch.matmul(T, R)
        return M

    def get_smooth_loss(disp, img):
        grad_disp_x = torch.abs(disp[:, :, :, :-1] - disp[:, :, :, 1:])
        grad_disp_y = torch.abs(disp[:, :, :-1, :] - disp[:, :, 1:, :])
        grad_img_x = torch.mean(torch.abs(img[:, :, :, :-1] - img[:, :, :, 1:]), 1, keepdim=True)
        grad_img_y = torch.mean(torch.abs(img[:, :, :-1, :] - img[:, :, 1:, :]), 1, keepdim=True)
        grad_disp_x *= torch.exp(-grad_img_x)
        grad_disp_y *= torch.exp(-grad_img_y)
        return grad_disp_x.mean() + grad_disp_y.mean()

    class DepthNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ELU(),
                                     nn.Conv2d(8, 8, 3, padding=1), nn.ELU())
            self.dispconv = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(8, 1, 3))

        def forward(self, x):
            f = self.enc(x)
            return {("disp", 1): torch.sigmoid(self.dispconv(f)),
                    ("disp", 0): torch.sigmoid(self.dispconv(F.interpolate(f, scale_factor=2, mode="nearest")))}

    class PoseNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = nn.Sequential(nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(8, 6, 1))

        def forward(self, x):
            out = self.convs(x)
            out = out.mean(3).mean(2)
            out = 0.01 * out.view(-1, 1, 1, 6)
            axisangle = out[..., :3]
            translation = out[..., 3:]
            return axisangle, translation

    models = nn.ModuleDict({"depth": DepthNet(), "pose": PoseNet()})
    backproject_depth = BackprojectDepth(batch_size, height, width)
    project_3d = Project3D(batch_size, height, width)
    ssim = SSIM()
    init = load(m, models, state)
    optimizer = optim.Adam(models.parameters(), 1e-3)
    lr_scheduler = optim.lr_scheduler.StepLR(optimizer, 15, 0.1)
    K = np.array([[0.58 * width, 0, 0.5 * width, 0], [0, 1.92 * height, 0.5 * height, 0], [0, 0, 1, 0],
                  [0, 0, 0, 1]], dtype=np.float32)
    K_t = torch.from_numpy(np.stack([K] * batch_size))
    inv_K = torch.from_numpy(np.stack([np.linalg.pinv(K)] * batch_size))
    frame_ids, scales = [0, -1, 1], [0, 1]

    def compute_reprojection_loss(pred, target):
        abs_diff = torch.abs(target - pred)
        l1_loss = abs_diff.mean(1, True)
        ssim_loss = ssim(pred, target).mean(1, True)
        return 0.85 * ssim_loss + 0.15 * l1_loss

    losses = []
    for step in range(2):
        inputs = {("color", f, 0): torch.tensor(rng.uniform(0, 1, (batch_size, 3, height, width)).astype(np.float32))
                  for f in frame_ids}
        outputs = models["depth"](inputs[("color", 0, 0)])
        for f_i in frame_ids[1:]:
            pose_inputs = [inputs[("color", f_i, 0)], inputs[("color", 0, 0)]] if f_i < 0 else \
                [inputs[("color", 0, 0)], inputs[("color", f_i, 0)]]
            axisangle, translation = models["pose"](torch.cat(pose_inputs, 1))
            outputs[("cam_T_cam", 0, f_i)] = transformation_from_parameters(axisangle[:, 0], translation[:, 0],
                                                                            invert=(f_i < 0))
        for scale in scales:
            disp = outputs[("disp", scale)]
            disp = F.interpolate(disp, [height, width], mode="bilinear", align_corners=False)
            _, depth = disp_to_depth(disp, 0.1, 100.0)
            for frame_id in frame_ids[1:]:
                T = outputs[("cam_T_cam", 0, frame_id)]
                cam_points = backproject_depth(depth, inv_K)
                pix_coords = project_3d(cam_points, K_t, T)
                outputs[("color", frame_id, scale)] = F.grid_sample(inputs[("color", frame_id, 0)], pix_coords,
                                                                    padding_mode="border", align_corners=False)
        total_loss = 0
        target = inputs[("color", 0, 0)]
        for scale in scales:
            reprojection_losses = torch.cat([compute_reprojection_loss(outputs[("color", f, scale)], target)
                                             for f in frame_ids[1:]], 1)
            identity_reprojection_losses = torch.cat([compute_reprojection_loss(inputs[("color", f, 0)], target)
                                                      for f in frame_ids[1:]], 1)
            reprojection_loss = reprojection_losses.mean(1, keepdim=True)  # avg_reprojection
            identity_reprojection_loss = identity_reprojection_losses.mean(1, keepdim=True)
            # torch.randn(identity_reprojection_loss.shape, device=...) * 0.00001, drawn by numpy
            identity_reprojection_loss += torch.tensor(normal(rng, *identity_reprojection_loss.shape)) * 0.00001
            combined = torch.cat((identity_reprojection_loss, reprojection_loss), dim=1)
            to_optimise, idxs = torch.min(combined, dim=1)
            outputs["identity_selection/{}".format(scale)] = (idxs > identity_reprojection_loss.shape[1] - 1).float()
            loss = to_optimise.mean()
            disp = outputs[("disp", scale)]
            color = F.interpolate(target, disp.shape[-2:], mode="bilinear", align_corners=False)
            mean_disp = disp.mean(2, True).mean(3, True)
            norm_disp = disp / (mean_disp + 1e-7)
            smooth_loss = get_smooth_loss(norm_disp, color)
            loss += 1e-3 * smooth_loss / (2 ** scale)
            total_loss += loss
        total_loss /= len(scales)
        optimizer.zero_grad()
        total_loss.backward()
        optimizer.step()
        lr_scheduler.step()
        losses += [total_loss.item(), outputs["identity_selection/0"].mean().item(),
                   outputs[("color", 1, 0)].sum().item()]
    return init, losses + summary(models.parameters())


def test_monodepth2():
    compare(monodepth2)


# (d) NVIDIA/partialconv (models/partialconv2d.py's PartialConv2d; the inpainting U-Net of Liu et al.): an
# nn.Conv2d subclass popping its own kwargs ('multi_channel', 'return_mask') before super().__init__, a plain
# torch.ones weight_maskUpdater moved by .to(input) when .type() differs, the mask's F.conv2d, slide_winsize /
# (update_mask + 1e-8), torch.clamp and torch.mul under no_grad, the cached last_size, raw_out - bias_view;
# an encoder-decoder passing masks along (F.interpolate nearest of image and mask, torch.cat of both), the
# valid/hole L1 losses and total variation on the composite, Adam
def partial_conv_inpainting(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(4)

    class PartialConv2d(nn.Conv2d):
        def __init__(self, *args, **kwargs):
            if "multi_channel" in kwargs:
                self.multi_channel = kwargs["multi_channel"]
                kwargs.pop("multi_channel")
            else:
                self.multi_channel = False
            if "return_mask" in kwargs:
                self.return_mask = kwargs["return_mask"]
                kwargs.pop("return_mask")
            else:
                self.return_mask = False
            super(PartialConv2d, self).__init__(*args, **kwargs)
            if self.multi_channel:
                self.weight_maskUpdater = torch.ones(self.out_channels, self.in_channels, self.kernel_size[0],
                                                     self.kernel_size[1])
            else:
                self.weight_maskUpdater = torch.ones(1, 1, self.kernel_size[0], self.kernel_size[1])
            self.slide_winsize = self.weight_maskUpdater.shape[1] * self.weight_maskUpdater.shape[2] * \
                self.weight_maskUpdater.shape[3]
            self.last_size = (None, None, None, None)
            self.update_mask = None
            self.mask_ratio = None

        def forward(self, input, mask_in=None):
            assert len(input.shape) == 4
            if mask_in is not None or self.last_size != tuple(input.shape):
                self.last_size = tuple(input.shape)
                with torch.no_grad():
                    if self.weight_maskUpdater.type() != input.type():
                        self.weight_maskUpdater = self.weight_maskUpdater.to(input)
                    if mask_in is None:
                        if self.multi_channel:
                            mask = torch.ones(input.data.shape[0], input.data.shape[1], input.data.shape[2],
                                              input.data.shape[3]).to(input)
                        else:
                            mask = torch.ones(1, 1, input.data.shape[2], input.data.shape[3]).to(input)
                    else:
                        mask = mask_in
                    self.update_mask = F.conv2d(mask, self.weight_maskUpdater, bias=None, stride=self.stride,
                                                padding=self.padding, dilation=self.dilation, groups=1)
                    self.mask_ratio = self.slide_winsize / (self.update_mask + 1e-8)
                    self.update_mask = torch.clamp(self.update_mask, 0, 1)
                    self.mask_ratio = torch.mul(self.mask_ratio, self.update_mask)
            raw_out = super(PartialConv2d, self).forward(torch.mul(input, mask) if mask_in is not None else input)
            if self.bias is not None:
                bias_view = self.bias.view(1, self.out_channels, 1, 1)
                output = torch.mul(raw_out - bias_view, self.mask_ratio) + bias_view
                output = torch.mul(output, self.update_mask)
            else:
                output = torch.mul(raw_out, self.mask_ratio)
            if self.return_mask:
                return output, self.update_mask
            return output

    class PConvUNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1 = PartialConv2d(3, 8, 5, stride=2, padding=2, multi_channel=True, return_mask=True)
            self.enc2 = PartialConv2d(8, 8, 3, stride=2, padding=1, multi_channel=True, return_mask=True)
            self.bn2 = nn.BatchNorm2d(8)
            self.dec2 = PartialConv2d(16, 8, 3, padding=1, multi_channel=True, return_mask=True)
            self.dec1 = PartialConv2d(11, 3, 3, padding=1, multi_channel=True, return_mask=True, bias=False)

        def forward(self, input, input_mask):
            h1, m1 = self.enc1(input, input_mask)
            h1 = F.relu(h1)
            h2, m2 = self.enc2(h1, m1)
            h2 = F.relu(self.bn2(h2))
            h = F.interpolate(h2, scale_factor=2, mode="nearest")
            hm = F.interpolate(m2, scale_factor=2, mode="nearest")
            h, hm = self.dec2(torch.cat([h, h1], dim=1), torch.cat([hm, m1], dim=1))
            h = F.leaky_relu(h, negative_slope=0.2)
            h = F.interpolate(h, scale_factor=2, mode="nearest")
            hm = F.interpolate(hm, scale_factor=2, mode="nearest")
            h, hm = self.dec1(torch.cat([h, input], dim=1), torch.cat([hm, input_mask], dim=1))
            return h, hm

    def total_variation_loss(image):
        loss = torch.mean(torch.abs(image[:, :, :, :-1] - image[:, :, :, 1:])) + \
            torch.mean(torch.abs(image[:, :, :-1, :] - image[:, :, 1:, :]))
        return loss

    model = PConvUNet()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=2e-4)
    l1 = nn.L1Loss()
    losses = []
    for step in range(2):
        gt = torch.tensor(rng.uniform(-1, 1, (3, 3, 16, 16)).astype(np.float32))
        mask = torch.tensor((rng.uniform(0, 1, (3, 1, 16, 16)) > 0.3).astype(np.float32)).repeat(1, 3, 1, 1)
        image = gt * mask
        output, _ = model(image, mask)
        output_comp = mask * image + (1 - mask) * output
        loss = 6.0 * l1((1 - mask) * output, (1 - mask) * gt) + l1(mask * output, mask * gt) \
            + 0.1 * total_variation_loss(output_comp)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    return init, losses + summary(model.parameters())


def test_partial_conv_inpainting():
    compare(partial_conv_inpainting)


# (e) yashbhalgat/HashNeRF-pytorch (hash_encoding.py's HashEmbedder, utils.py's hash and get_voxel_vertices):
# BOX_OFFSETS as a module-level int64 tensor of the 8 corners, the spatial hash as an XOR (^=) of int32 coordinate
# products by primes past int32's range (which wrap, as torch's int32 arithmetic), masked by a 0-d int64
# tensor with & (a 0-d tensor does not promote: int32 stays), a growth factor b = exp((log(finest) -
# log(base)) / (n_levels - 1)) of int64 0-d tensors, torch.floor(...).int(), keep_mask by max/min against the box,
# nn.Embedding tables initialised by nn.init.uniform_(a=-1e-4, b=1e-4), trilinear interpolation by weights[:, 0][:,
# None], a small MLP, Adam with betas=(0.9, 0.99) and eps=1e-15 and an MSE to targets
def hash_nerf_encoding(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(5)
    BOX_OFFSETS = torch.tensor([[[i, j, k] for i in [0, 1] for j in [0, 1] for k in [0, 1]]])

    def hash(coords, log2_hashmap_size):
        primes = [1, 2654435761, 805459861, 3674653429, 2097192037, 1434869437, 2165219737]
        xor_result = torch.zeros_like(coords)[..., 0]
        for i in range(coords.shape[-1]):
            xor_result ^= coords[..., i] * primes[i]
        return torch.tensor((1 << log2_hashmap_size) - 1).to(xor_result.device) & xor_result

    def get_voxel_vertices(xyz, bounding_box, resolution, log2_hashmap_size):
        box_min, box_max = bounding_box
        keep_mask = xyz == torch.max(torch.min(xyz, box_max), box_min)
        if not torch.all(xyz <= box_max) or not torch.all(xyz >= box_min):
            xyz = torch.clamp(xyz, min=box_min, max=box_max)
        grid_size = (box_max - box_min) / resolution
        bottom_left_idx = torch.floor((xyz - box_min) / grid_size).int()
        voxel_min_vertex = bottom_left_idx * grid_size + box_min
        voxel_max_vertex = voxel_min_vertex + torch.tensor([1.0, 1.0, 1.0]) * grid_size
        voxel_indices = bottom_left_idx.unsqueeze(1) + BOX_OFFSETS
        hashed_voxel_indices = hash(voxel_indices, log2_hashmap_size)
        return voxel_min_vertex, voxel_max_vertex, hashed_voxel_indices, keep_mask

    class HashEmbedder(nn.Module):
        def __init__(self, bounding_box, n_levels=16, n_features_per_level=2, log2_hashmap_size=19,
                     base_resolution=16, finest_resolution=512):
            super(HashEmbedder, self).__init__()
            self.bounding_box = bounding_box
            self.n_levels = n_levels
            self.n_features_per_level = n_features_per_level
            self.log2_hashmap_size = log2_hashmap_size
            self.base_resolution = torch.tensor(base_resolution)
            self.finest_resolution = torch.tensor(finest_resolution)
            self.out_dim = self.n_levels * self.n_features_per_level
            self.b = torch.exp((torch.log(self.finest_resolution) - torch.log(self.base_resolution)) / (n_levels - 1))
            self.embeddings = nn.ModuleList([nn.Embedding(2 ** self.log2_hashmap_size, self.n_features_per_level)
                                             for i in range(n_levels)])
            for i in range(n_levels):
                nn.init.uniform_(self.embeddings[i].weight, a=-0.0001, b=0.0001)

        def trilinear_interp(self, x, voxel_min_vertex, voxel_max_vertex, voxel_embedds):
            weights = (x - voxel_min_vertex) / (voxel_max_vertex - voxel_min_vertex)  # B x 3
            c00 = voxel_embedds[:, 0] * (1 - weights[:, 0][:, None]) + voxel_embedds[:, 4] * weights[:, 0][:, None]
            c01 = voxel_embedds[:, 1] * (1 - weights[:, 0][:, None]) + voxel_embedds[:, 5] * weights[:, 0][:, None]
            c10 = voxel_embedds[:, 2] * (1 - weights[:, 0][:, None]) + voxel_embedds[:, 6] * weights[:, 0][:, None]
            c11 = voxel_embedds[:, 3] * (1 - weights[:, 0][:, None]) + voxel_embedds[:, 7] * weights[:, 0][:, None]
            c0 = c00 * (1 - weights[:, 1][:, None]) + c10 * weights[:, 1][:, None]
            c1 = c01 * (1 - weights[:, 1][:, None]) + c11 * weights[:, 1][:, None]
            c = c0 * (1 - weights[:, 2][:, None]) + c1 * weights[:, 2][:, None]
            return c

        def forward(self, x):
            x_embedded_all = []
            for i in range(self.n_levels):
                resolution = torch.floor(self.base_resolution * self.b ** i)
                voxel_min_vertex, voxel_max_vertex, hashed_voxel_indices, keep_mask = get_voxel_vertices(
                    x, self.bounding_box, resolution, self.log2_hashmap_size)
                voxel_embedds = self.embeddings[i](hashed_voxel_indices)
                x_embedded = self.trilinear_interp(x, voxel_min_vertex, voxel_max_vertex, voxel_embedds)
                x_embedded_all.append(x_embedded)
            keep_mask = keep_mask.sum(dim=-1) == keep_mask.shape[-1]
            return torch.cat(x_embedded_all, dim=-1), keep_mask

    bounding_box = (torch.tensor([-1.0, -1.0, -1.0]), torch.tensor([1.0, 1.0, 1.0]))
    embedder = HashEmbedder(bounding_box, n_levels=4, n_features_per_level=2, log2_hashmap_size=6,
                            base_resolution=2, finest_resolution=16)
    mlp = nn.Sequential(nn.Linear(embedder.out_dim, 16), nn.ReLU(), nn.Linear(16, 4))
    model = nn.ModuleDict({"embed": embedder, "mlp": mlp})
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.9, 0.99), eps=1e-15)
    losses = []
    for step in range(2):
        pts = torch.tensor(rng.uniform(-1.2, 1.2, (12, 3)).astype(np.float32))  # a few outside the box
        target = torch.tensor(normal(rng, 12, 4))
        embedded, keep_mask = embedder(pts)
        out = mlp(embedded)
        loss = F.mse_loss(out[keep_mask], target[keep_mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), keep_mask.sum().item()]
    _, _, hashed, _ = get_voxel_vertices(pts, bounding_box, torch.tensor(8.0), 6)
    losses += [hashed.sum().item(), float(hashed.dtype == torch.int32), float(embedder.b)]
    return init, losses + summary(model.parameters())


def test_hash_nerf_encoding():
    compare(hash_nerf_encoding)


# (f) SchNet as in atomistic-machine-learning/schnetpack (nn/radial.py's GaussianRBF, nn/cutoff.py's CosineCutoff,
# nn/activations.py's shifted_softplus, representation/schnet.py's SchNetInteraction, atomistic/response.py's
# Forces) and torch_geometric's SchNet: all pairs within a cutoff by torch.cdist and nonzero().t(), the offsets
# registered as a buffer, exp(coeff * (d - offsets) ** 2), 0.5 * (cos(d * pi / cutoff) + 1) * (d < cutoff).float(),
# F.softplus(x) - math.log(2.0), continuous-filter convolutions gathered at idx_j and summed into idx_i by
# index_add, per-molecule energies by index_add over a batch vector, forces as -dE/dR by torch.autograd.grad with
# create_graph=True, and a loss on energies and forces that backpropagates through that gradient (double
# backward through cdist, cos and exp), AdamW and ReduceLROnPlateau
def schnet_forces(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(6)

    def shifted_softplus(x):
        return F.softplus(x) - math.log(2.0)

    class GaussianRBF(nn.Module):
        def __init__(self, n_rbf, cutoff, start=0.0, trainable=False):
            super().__init__()
            self.n_rbf = n_rbf
            offset = torch.linspace(start, cutoff, n_rbf)
            widths = torch.FloatTensor(torch.abs(offset[1] - offset[0]) * torch.ones_like(offset))
            if trainable:
                self.widths = nn.Parameter(widths)
                self.offsets = nn.Parameter(offset)
            else:
                self.register_buffer("widths", widths)
                self.register_buffer("offsets", offset)

        def forward(self, inputs):
            coeff = -0.5 / torch.pow(self.widths, 2)
            diff = inputs[..., None] - self.offsets
            y = torch.exp(coeff * torch.pow(diff, 2))
            return y

    class CosineCutoff(nn.Module):
        def __init__(self, cutoff):
            super().__init__()
            self.register_buffer("cutoff", torch.FloatTensor([cutoff]))

        def forward(self, input):
            input_cut = 0.5 * (torch.cos(input * math.pi / self.cutoff) + 1.0)
            input_cut *= (input < self.cutoff).float()
            return input_cut

    class SchNetInteraction(nn.Module):
        def __init__(self, n_atom_basis, n_rbf, n_filters):
            super().__init__()
            self.in2f = nn.Linear(n_atom_basis, n_filters, bias=False)
            self.f2out = nn.Sequential(nn.Linear(n_filters, n_atom_basis), nn.Softplus(),
                                       nn.Linear(n_atom_basis, n_atom_basis))
            self.filter_network = nn.Sequential(nn.Linear(n_rbf, n_filters), nn.Softplus(),
                                                nn.Linear(n_filters, n_filters))

        def forward(self, x, f_ij, idx_i, idx_j, rcut_ij):
            x = self.in2f(x)
            Wij = self.filter_network(f_ij)
            Wij = Wij * rcut_ij[:, None]
            x_j = x[idx_j]
            x_ij = x_j * Wij
            x = torch.zeros_like(x).index_add(0, idx_i, x_ij)  # scatter_add of schnetpack.nn.scatter
            x = self.f2out(x)
            return x

    class SchNet(nn.Module):
        def __init__(self, n_atom_basis=8, n_interactions=2, n_rbf=6, cutoff=3.0, max_z=10):
            super().__init__()
            self.cutoff = cutoff
            self.embedding = nn.Embedding(max_z, n_atom_basis, padding_idx=0)
            self.radial_basis = GaussianRBF(n_rbf=n_rbf, cutoff=cutoff)
            self.cutoff_fn = CosineCutoff(cutoff)
            self.interactions = nn.ModuleList([SchNetInteraction(n_atom_basis, n_rbf, n_atom_basis)
                                               for _ in range(n_interactions)])
            self.out1 = nn.Linear(n_atom_basis, n_atom_basis // 2)
            self.out2 = nn.Linear(n_atom_basis // 2, 1)

        def forward(self, z, pos, batch, n_mol):
            mask = batch[:, None] == batch[None, :]
            dist = torch.cdist(pos, pos)
            adj = mask & (dist < self.cutoff)
            adj.fill_diagonal_(False)
            idx_i, idx_j = adj.nonzero().t()
            r_ij = pos[idx_j] - pos[idx_i]
            d_ij = torch.norm(r_ij, dim=1)
            f_ij = self.radial_basis(d_ij)
            rcut_ij = self.cutoff_fn(d_ij)
            x = self.embedding(z)
            for interaction in self.interactions:
                v = interaction(x, f_ij, idx_i, idx_j, rcut_ij)
                x = x + v
            yi = self.out2(shifted_softplus(self.out1(x)))
            energy = torch.zeros(n_mol, 1).index_add(0, batch, yi)
            return energy.squeeze(-1)

    model = SchNet()
    init = load(m, model, state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    rho_energy, rho_forces = 0.1, 0.9
    z = torch.tensor([6, 1, 1, 1, 8, 1, 1])
    batch = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    losses = []
    for step in range(2):
        pos = torch.tensor(normal(rng, 7, 3) * 1.2)
        pos.requires_grad_(True)
        energy_t = torch.tensor(normal(rng, 2))
        forces_t = torch.tensor(normal(rng, 7, 3))
        energy = model(z, pos, batch, 2)
        forces = -torch.autograd.grad(energy, pos, grad_outputs=torch.ones_like(energy), create_graph=True,
                                      retain_graph=True)[0]
        loss = rho_energy * F.mse_loss(energy, energy_t) + rho_forces * F.mse_loss(forces, forces_t)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step(loss.item())
        losses += [loss.item(), forces.abs().sum().item(), optimizer.param_groups[0]["lr"]]
    return init, losses + summary(model.parameters())


def test_schnet_forces():
    compare(schnet_forces)


# (g) zhouhaoyi/Informer2020 (models/attn.py's ProbAttention and AttentionLayer, utils/masking.py's ProbMask,
# models/encoder.py's ConvLayer and EncoderLayer, models/embed.py's TokenEmbedding): keys sampled per query by
# an index drawn with torch.randint (here numpy's, as the script's draw), K.unsqueeze(-3).expand(B, H, L_Q, L_K, E)
# and K_expand[:, :, torch.arange(L_Q).unsqueeze(1), index_sample, :], the sparsity measure max - sum / L_K,
# M.topk(n_top, sorted=False)[1], Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :], the
# lazy context by V.cumsum(dim=-2) and a ProbMask of triu(1) expanded and indexed the same way, masked_fill_ with
# -np.inf, and context_in[arange, arange, index, :] = torch.matmul(attn, V).type_as(context_in) (an advanced-index
# write into a tensor that needs grad); Conv1d with padding_mode='circular' and kaiming_normal_(mode='fan_in',
# nonlinearity='leaky_relu'), the distilling ConvLayer (BatchNorm1d, ELU, MaxPool1d(stride=2)), Adam and MSE
def informer_prob_attention(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    from math import sqrt
    torch.manual_seed(0)
    rng = np.random.default_rng(7)

    class ProbMask():
        def __init__(self, B, H, L, index, scores, device="cpu"):
            _mask = torch.ones(L, scores.shape[-1], dtype=torch.bool).to(device).triu(1)
            _mask_ex = _mask[None, None, :].expand(B, H, L, scores.shape[-1])
            indicator = _mask_ex[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :].to(device)
            self._mask = indicator.view(scores.shape).to(device)

        @property
        def mask(self):
            return self._mask

    class ProbAttention(nn.Module):
        def __init__(self, mask_flag=True, factor=5, scale=None, attention_dropout=0.1, output_attention=False):
            super(ProbAttention, self).__init__()
            self.factor = factor
            self.scale = scale
            self.mask_flag = mask_flag
            self.output_attention = output_attention
            self.dropout = nn.Dropout(attention_dropout)

        def _prob_QK(self, Q, K, sample_k, n_top):  # n_top: c*ln(L_q)
            B, H, L_K, E = K.shape
            _, _, L_Q, _ = Q.shape
            K_expand = K.unsqueeze(-3).expand(B, H, L_Q, L_K, E)
            # index_sample = torch.randint(L_K, (L_Q, sample_k)), drawn by numpy
            index_sample = torch.tensor(rng.integers(0, L_K, (L_Q, sample_k)))
            K_sample = K_expand[:, :, torch.arange(L_Q).unsqueeze(1), index_sample, :]
            Q_K_sample = torch.matmul(Q.unsqueeze(-2), K_sample.transpose(-2, -1)).squeeze(-2)
            M = Q_K_sample.max(-1)[0] - torch.div(Q_K_sample.sum(-1), L_K)
            M_top = M.topk(n_top, sorted=False)[1]
            Q_reduce = Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :]
            Q_K = torch.matmul(Q_reduce, K.transpose(-2, -1))
            return Q_K, M_top

        def _get_initial_context(self, V, L_Q):
            B, H, L_V, D = V.shape
            if not self.mask_flag:
                V_sum = V.mean(dim=-2)
                contex = V_sum.unsqueeze(-2).expand(B, H, L_Q, V_sum.shape[-1]).clone()
            else:
                assert L_Q == L_V
                contex = V.cumsum(dim=-2)
            return contex

        def _update_context(self, context_in, V, scores, index, L_Q, attn_mask):
            B, H, L_V, D = V.shape
            if self.mask_flag:
                attn_mask = ProbMask(B, H, L_Q, index, scores, device=V.device)
                scores.masked_fill_(attn_mask.mask, -np.inf)
            attn = torch.softmax(scores, dim=-1)
            context_in[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :] = \
                torch.matmul(attn, V).type_as(context_in)
            return (context_in, None)

        def forward(self, queries, keys, values, attn_mask):
            B, L_Q, H, D = queries.shape
            _, L_K, _, _ = keys.shape
            queries = queries.transpose(2, 1)
            keys = keys.transpose(2, 1)
            values = values.transpose(2, 1)
            U_part = self.factor * np.ceil(np.log(L_K)).astype("int").item()
            u = self.factor * np.ceil(np.log(L_Q)).astype("int").item()
            U_part = U_part if U_part < L_K else L_K
            u = u if u < L_Q else L_Q
            scores_top, index = self._prob_QK(queries, keys, sample_k=U_part, n_top=u)
            scale = self.scale or 1. / sqrt(D)
            if scale is not None:
                scores_top = scores_top * scale
            context = self._get_initial_context(values, L_Q)
            context, attn = self._update_context(context, values, scores_top, index, L_Q, attn_mask)
            return context.transpose(2, 1).contiguous(), attn

    class AttentionLayer(nn.Module):
        def __init__(self, attention, d_model, n_heads):
            super(AttentionLayer, self).__init__()
            d_keys = d_values = d_model // n_heads
            self.inner_attention = attention
            self.query_projection = nn.Linear(d_model, d_keys * n_heads)
            self.key_projection = nn.Linear(d_model, d_keys * n_heads)
            self.value_projection = nn.Linear(d_model, d_values * n_heads)
            self.out_projection = nn.Linear(d_values * n_heads, d_model)
            self.n_heads = n_heads

        def forward(self, queries, keys, values, attn_mask):
            B, L, _ = queries.shape
            _, S, _ = keys.shape
            H = self.n_heads
            queries = self.query_projection(queries).view(B, L, H, -1)
            keys = self.key_projection(keys).view(B, S, H, -1)
            values = self.value_projection(values).view(B, S, H, -1)
            out, attn = self.inner_attention(queries, keys, values, attn_mask)
            out = out.view(B, L, -1)
            return self.out_projection(out), attn

    class TokenEmbedding(nn.Module):
        def __init__(self, c_in, d_model):
            super(TokenEmbedding, self).__init__()
            padding = 1 if torch.__version__ >= "1.5.0" else 2
            self.tokenConv = nn.Conv1d(in_channels=c_in, out_channels=d_model, kernel_size=3, padding=padding,
                                       padding_mode="circular")
            for mod in self.modules():
                if isinstance(mod, nn.Conv1d):
                    nn.init.kaiming_normal_(mod.weight, mode="fan_in", nonlinearity="leaky_relu")

        def forward(self, x):
            x = self.tokenConv(x.permute(0, 2, 1)).transpose(1, 2)
            return x

    class ConvLayer(nn.Module):
        def __init__(self, c_in):
            super(ConvLayer, self).__init__()
            self.downConv = nn.Conv1d(in_channels=c_in, out_channels=c_in, kernel_size=3, padding=1,
                                      padding_mode="circular")
            self.norm = nn.BatchNorm1d(c_in)
            self.activation = nn.ELU()
            self.maxPool = nn.MaxPool1d(kernel_size=3, stride=2, padding=1)

        def forward(self, x):
            x = self.downConv(x.permute(0, 2, 1))
            x = self.norm(x)
            x = self.activation(x)
            x = self.maxPool(x)
            x = x.transpose(1, 2)
            return x

    class EncoderLayer(nn.Module):
        def __init__(self, attention, d_model, d_ff=None, dropout=0.1, activation="relu"):
            super(EncoderLayer, self).__init__()
            d_ff = d_ff or 4 * d_model
            self.attention = attention
            self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
            self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)
            self.dropout = nn.Dropout(dropout)
            self.activation = F.relu if activation == "relu" else F.gelu

        def forward(self, x, attn_mask=None):
            new_x, attn = self.attention(x, x, x, attn_mask=attn_mask)
            x = x + self.dropout(new_x)
            y = x = self.norm1(x)
            y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
            y = self.dropout(self.conv2(y).transpose(-1, 1))
            return self.norm2(x + y), attn

    class Informer(nn.Module):
        def __init__(self, c_in=3, d_model=8, n_heads=2, factor=1):
            super().__init__()
            self.embed = TokenEmbedding(c_in, d_model)
            self.enc = EncoderLayer(AttentionLayer(ProbAttention(False, factor, attention_dropout=0.0), d_model,
                                                   n_heads), d_model, 16, dropout=0.0, activation="gelu")
            self.distil = ConvLayer(d_model)
            self.dec = EncoderLayer(AttentionLayer(ProbAttention(True, factor, attention_dropout=0.0), d_model,
                                                   n_heads), d_model, 16, dropout=0.0)
            self.projection = nn.Linear(d_model, c_in, bias=True)

        def forward(self, x):
            h, _ = self.enc(self.embed(x))
            h = self.distil(h)
            h, _ = self.dec(h)
            return self.projection(h)

    model = Informer()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.MSELoss()
    losses = []
    for step in range(2):
        x = torch.tensor(normal(rng, 3, 16, 3))
        y = torch.tensor(normal(rng, 3, 8, 3))
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    # the distilling conv's bias and the LayerNorm bias before it shift each channel by a constant, which the
    # BatchNorm after them takes out: their gradients are rounding noise, that Adam turns into steps of +-lr
    noise = ("enc.norm2.bias", "distil.downConv.bias")
    return init, losses + summary(p for n, p in model.named_parameters() if n not in noise)


def test_informer_prob_attention():
    compare(informer_prob_attention)


# (h) NM512/dreamerv3-torch (tools.py's OneHotDist, DiscDist, ContDist, Bernoulli, symlog/symexp, lambda_return;
# networks.py's RSSM.kl_loss): `import torch.distributions as torchd`, a subclass of
# torchd.one_hot_categorical.OneHotCategorical mixing in a uniform share (unimix) of its softmax, whose mode() is a
# method reading super().logits, F.one_hot(torch.argmax(..., axis=-1)) with a straight-through gradient,
# torchd.independent.Independent(..., 1), KL balancing by torchd.kl.kl_divergence between detached and live
# posteriors and priors clipped at the free nats by torch.clip(min=), the twohot DiscDist over symlog buckets
# (sums of int32 comparisons, torch.clip, torch.where(equal, 1, ...), log_pred by logsumexp), an Independent
# Bernoulli(logits=) continuation head, the lambda return by a reversed loop and torch.stack, Adam with a
# clip_grad_norm_
def dreamer_v3_distributions(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torchd = torch.distributions
    torch.manual_seed(0)
    rng = np.random.default_rng(8)

    def symlog(x):
        return torch.sign(x) * torch.log(torch.abs(x) + 1.0)

    def symexp(x):
        return torch.sign(x) * (torch.exp(torch.abs(x)) - 1.0)

    class OneHotDist(torchd.one_hot_categorical.OneHotCategorical):
        def __init__(self, logits=None, probs=None, unimix_ratio=0.0):
            if logits is not None and unimix_ratio > 0.0:
                probs = F.softmax(logits, dim=-1)
                probs = probs * (1.0 - unimix_ratio) + unimix_ratio / probs.shape[-1]
                logits = torch.log(probs)
                super().__init__(logits=logits, probs=None)
            else:
                super().__init__(logits=logits, probs=probs)

        def mode(self):
            _mode = F.one_hot(torch.argmax(super().logits, axis=-1), super().logits.shape[-1])
            return _mode.detach() + super().logits - super().logits.detach()

    class DiscDist:
        def __init__(self, logits, low=-20.0, high=20.0, transfwd=symlog, transbwd=symexp, device="cpu"):
            self.logits = logits
            self.probs = torch.softmax(logits, -1)
            self.buckets = torch.linspace(low, high, steps=logits.shape[-1], device=device)
            self.width = (self.buckets[-1] - self.buckets[0]) / 255
            self.transfwd = transfwd
            self.transbwd = transbwd

        def mean(self):
            _mean = self.probs * self.buckets
            return self.transbwd(torch.sum(_mean, dim=-1, keepdim=True))

        def log_prob(self, x):
            x = self.transfwd(x)
            below = torch.sum((self.buckets <= x[..., None]).to(torch.int32), dim=-1) - 1
            above = len(self.buckets) - torch.sum((self.buckets > x[..., None]).to(torch.int32), dim=-1)
            below = torch.clip(below, 0, len(self.buckets) - 1)
            above = torch.clip(above, 0, len(self.buckets) - 1)
            equal = below == above
            dist_to_below = torch.where(equal, 1, torch.abs(self.buckets[below] - x))
            dist_to_above = torch.where(equal, 1, torch.abs(self.buckets[above] - x))
            total = dist_to_below + dist_to_above
            weight_below = dist_to_above / total
            weight_above = dist_to_below / total
            target = (F.one_hot(below, num_classes=len(self.buckets)) * weight_below[..., None]
                      + F.one_hot(above, num_classes=len(self.buckets)) * weight_above[..., None])
            log_pred = self.logits - torch.logsumexp(self.logits, -1, keepdim=True)
            target = target.squeeze(-2)
            return (target * log_pred).sum(-1)

    class Bernoulli:
        def __init__(self, dist=None):
            super().__init__()
            self._dist = dist
            self.mean = dist.mean

        def __getattr__(self, name):
            return getattr(self._dist, name)

        def mode(self):
            _mode = torch.round(self._dist.mean)
            return _mode.detach() + self._dist.mean - self._dist.mean.detach()

        def log_prob(self, x):
            _logits = self._dist.base_dist.logits
            log_probs0 = -F.softplus(_logits)
            log_probs1 = -F.softplus(-_logits)
            return torch.sum(log_probs0 * (1 - x) + log_probs1 * x, -1)

    def lambda_return(reward, value, pcont, bootstrap, lambda_, axis):
        assert len(reward.shape) == len(value.shape), (reward.shape, value.shape)
        if isinstance(pcont, (int, float)):
            pcont = pcont * torch.ones_like(reward)
        if bootstrap is None:
            bootstrap = torch.zeros_like(value[-1])
        next_values = torch.cat([value[1:], bootstrap[None]], 0)
        inputs = reward + pcont * next_values * (1 - lambda_)
        outputs, last = [], bootstrap
        for t in reversed(range(reward.shape[0])):  # static_scan(..., reverse=True)
            last = inputs[t] + pcont[t] * lambda_ * last
            outputs.append(last)
        return torch.stack(outputs[::-1], 0)

    stoch, discrete, deter, embed_dim = 3, 4, 8, 6

    class RSSM(nn.Module):
        def __init__(self, unimix_ratio=0.01):
            super().__init__()
            self._unimix_ratio = unimix_ratio
            self._img_in = nn.Linear(stoch * discrete, deter)
            self._cell = nn.GRUCell(deter, deter)
            self._img_out = nn.Linear(deter, stoch * discrete)
            self._obs_out = nn.Linear(deter + embed_dim, stoch * discrete)

        def get_dist(self, logit):
            return torchd.independent.Independent(OneHotDist(logit, unimix_ratio=self._unimix_ratio), 1)

        def get_feat(self, state):
            shape = list(state["stoch"].shape[:-2]) + [stoch * discrete]
            return torch.cat([state["stoch"].reshape(shape), state["deter"]], -1)

        def step(self, prev, embed):
            x = F.silu(self._img_in(prev["stoch"].reshape(prev["stoch"].shape[0], -1)))
            deter = self._cell(x, prev["deter"])
            prior_logit = self._img_out(deter).reshape(list(deter.shape[:-1]) + [stoch, discrete])
            post_logit = self._obs_out(torch.cat([deter, embed], -1)).reshape(prior_logit.shape)
            post_stoch = self.get_dist(post_logit).mode()  # the script's sample(), its mode here (one draw)
            post = {"stoch": post_stoch, "deter": deter, "logit": post_logit}
            prior = {"stoch": self.get_dist(prior_logit).mode(), "deter": deter, "logit": prior_logit}
            return post, prior

        def kl_loss(self, post, prior, free, dyn_scale, rep_scale):
            kld = torchd.kl.kl_divergence
            dist = lambda x: self.get_dist(x["logit"])
            sg = lambda x: {k: v.detach() for k, v in x.items()}
            rep_loss = value = kld(dist(post), dist(sg(prior)))
            dyn_loss = kld(dist(sg(post)), dist(prior))
            rep_loss = torch.clip(rep_loss, min=free)
            dyn_loss = torch.clip(dyn_loss, min=free)
            loss = dyn_scale * dyn_loss + rep_scale * rep_loss
            return loss, value, dyn_loss, rep_loss

    feat_size = stoch * discrete + deter
    rssm = RSSM()
    reward_head = nn.Linear(feat_size, 16)
    cont_head = nn.Linear(feat_size, 1)
    value_head = nn.Linear(feat_size, 16)
    model = nn.ModuleDict({"rssm": rssm, "reward": reward_head, "cont": cont_head, "value": value_head})
    init = load(m, model, state)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, eps=1e-8)
    T, B = 4, 3
    losses = []
    for step in range(2):
        embed = torch.tensor(normal(rng, T, B, embed_dim))
        reward = torch.tensor(normal(rng, T, B) * 3)
        cont = torch.tensor((rng.uniform(size=(T, B, 1)) > 0.2).astype(np.float32))
        state_ = {"stoch": torch.zeros(B, stoch, discrete), "deter": torch.zeros(B, deter)}
        posts, kls, values = [], [], []
        for t in range(T):
            post, prior = rssm.step(state_, embed[t])
            kl, value, dyn_loss, rep_loss = rssm.kl_loss(post, prior, free=1.0, dyn_scale=0.5, rep_scale=0.1)
            posts.append(rssm.get_feat(post))
            kls.append(kl)
            values.append(value)
            state_ = post
        feat = torch.stack(posts, 0)
        reward_dist = DiscDist(reward_head(feat))
        cont_dist = Bernoulli(torchd.independent.Independent(torchd.bernoulli.Bernoulli(logits=cont_head(feat)), 1))
        value_dist = DiscDist(value_head(feat))
        target = lambda_return(reward.unsqueeze(-1), value_dist.mean().detach(), 0.997 * cont, None, 0.95, axis=0)
        loss = (torch.stack(kls).mean() - reward_dist.log_prob(reward.unsqueeze(-1)).mean()
                - cont_dist.log_prob(cont).mean() - value_dist.log_prob(target.detach()).mean())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 100.0)
        opt.step()
        losses += [loss.item(), torch.stack(values).mean().item(), target.sum().item(),
                   cont_dist.mode().sum().item(), reward_dist.mean().sum().item()]
    return init, losses + summary(model.parameters())


def test_dreamer_v3_distributions():
    compare(dreamer_v3_distributions)


# (i) facebookresearch/fairseq's wav2vec 2.0 (models/wav2vec/wav2vec2.py's ConvFeatureExtractionModel, Wav2Vec2Model
# (apply_mask, sample_negatives, compute_preds), TransformerEncoder's pos_conv; modules/gumbel_vector_quantizer.py;
# data/data_utils.py's compute_mask_indices; criterions/wav2vec_criterion.py): a Conv1d stack with GroupNorm(dim,
# dim) on the first layer, a positional Conv1d under nn.utils.weight_norm(name="weight", dim=2) less its last
# frame (SamePad), x[mask_indices] = self.mask_emb (a Parameter put at a bool mask's rows), the quantizer's hard
# codes by x.new_zeros(*x.shape).scatter_(-1, k.view(-1, 1), 1.0) and its perplexities (its eval path: training
# draws Gumbel noise), buffered_arange (torch.arange(max, out=buf) into a resized LongTensor), negatives by
# neg_idxs[neg_idxs >= tszs] += 1 (index draws by numpy for torch.randint), logits by torch.cosine_similarity over
# a cat of targets and negatives, logits[1:][neg_is_pos] = float("-inf"), the criterion's cross_entropy of the
# transposed logits to new_zeros(..., dtype=torch.long) targets with reduction="sum", the diversity and feature
# penalties, Adam
def wav2vec2_pretraining(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(9)

    def buffered_arange(max):
        if not hasattr(buffered_arange, "buf"):
            buffered_arange.buf = torch.LongTensor()
        if max > buffered_arange.buf.numel():
            buffered_arange.buf.resize_(max)
            torch.arange(max, out=buffered_arange.buf)
        return buffered_arange.buf[:max]

    def compute_mask_indices(shape, mask_prob, mask_length, min_masks=0):
        bsz, all_sz = shape
        mask = np.full((bsz, all_sz), False)
        all_num_mask = int(mask_prob * all_sz / float(mask_length) + rng.random())
        all_num_mask = max(min_masks, all_num_mask)
        for i in range(bsz):
            mask_idc = rng.choice(all_sz - mask_length, all_num_mask, replace=False)
            mask_idc = np.asarray([mask_idc[j] + offset for j in range(len(mask_idc)) for offset in range(mask_length)])
            mask[i, np.unique(mask_idc[mask_idc < all_sz])] = True
        return mask

    class SamePad(nn.Module):
        def __init__(self, kernel_size):
            super().__init__()
            self.remove = 1 if kernel_size % 2 == 0 else 0

        def forward(self, x):
            if self.remove > 0:
                x = x[:, :, : -self.remove]
            return x

    class GumbelVectorQuantizer(nn.Module):
        def __init__(self, dim, num_vars, temp, groups, combine_groups, vq_dim, time_first):
            super().__init__()
            self.groups = groups
            self.combine_groups = combine_groups
            self.input_dim = dim
            self.num_vars = num_vars
            self.time_first = time_first
            assert vq_dim % groups == 0, f"dim {vq_dim} must be divisible by groups {groups} for concatenation"
            var_dim = vq_dim // groups
            num_groups = groups if not combine_groups else 1
            self.vars = nn.Parameter(torch.FloatTensor(1, num_groups * num_vars, var_dim))
            nn.init.uniform_(self.vars)
            self.weight_proj = nn.Linear(self.input_dim, groups * num_vars)
            nn.init.normal_(self.weight_proj.weight, mean=0, std=1)
            nn.init.zeros_(self.weight_proj.bias)
            self.max_temp, self.min_temp, self.temp_decay = temp
            self.curr_temp = self.max_temp

        def set_num_updates(self, num_updates):
            self.curr_temp = max(self.max_temp * self.temp_decay ** num_updates, self.min_temp)

        def forward(self, x, produce_targets=False):
            result = {"num_vars": self.num_vars * self.groups}
            if not self.time_first:
                x = x.transpose(1, 2)
            bsz, tsz, fsz = x.shape
            x = x.reshape(-1, fsz)
            x = self.weight_proj(x)
            x = x.view(bsz * tsz * self.groups, -1)
            _, k = x.max(-1)
            hard_x = (x.new_zeros(*x.shape).scatter_(-1, k.view(-1, 1), 1.0).view(bsz * tsz, self.groups, -1))
            hard_probs = torch.mean(hard_x.float(), dim=0)
            result["code_perplexity"] = torch.exp(-torch.sum(hard_probs * torch.log(hard_probs + 1e-7), dim=-1)).sum()
            avg_probs = torch.softmax(x.view(bsz * tsz, self.groups, -1).float(), dim=-1).mean(dim=0)
            result["prob_perplexity"] = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-7), dim=-1)).sum()
            result["temp"] = self.curr_temp
            if self.training:
                x = F.gumbel_softmax(x.float(), tau=self.curr_temp, hard=True).type_as(x)
            else:
                x = hard_x
            x = x.view(bsz * tsz, -1)
            vars = self.vars
            if self.combine_groups:
                vars = vars.repeat(1, self.groups, 1)
            if produce_targets:
                result["targets"] = (x.view(bsz * tsz * self.groups, -1).argmax(dim=-1)
                                     .view(bsz, tsz, self.groups).detach())
            x = x.unsqueeze(-1) * vars
            x = x.view(bsz * tsz, self.groups, self.num_vars, -1)
            x = x.sum(-2)
            x = x.view(bsz, tsz, -1)
            if not self.time_first:
                x = x.transpose(1, 2)
            result["x"] = x
            return result

    class Wav2Vec2Model(nn.Module):
        def __init__(self, embed=8, conv_dim=8, final_dim=6, n_negatives=3, mask_prob=0.5, mask_length=2):
            super().__init__()
            layers, in_d = [], 1
            for i, (dim, k, stride) in enumerate([(conv_dim, 5, 3), (conv_dim, 3, 2)]):
                conv = nn.Conv1d(in_d, dim, k, stride=stride, bias=False)
                nn.init.kaiming_normal_(conv.weight)
                norm = [nn.GroupNorm(dim, dim, affine=True)] if i == 0 else []
                layers.append(nn.Sequential(conv, nn.Dropout(p=0.0), *norm, nn.GELU()))
                in_d = dim
            self.feature_extractor = nn.ModuleList(layers)
            self.layer_norm = nn.LayerNorm(conv_dim)
            self.post_extract_proj = nn.Linear(conv_dim, embed)
            self.mask_emb = nn.Parameter(torch.FloatTensor(embed).uniform_())
            self.pos_conv = nn.Conv1d(embed, embed, kernel_size=4, padding=2, groups=2)
            std = math.sqrt((4 * (1.0 - 0.0)) / (4 * embed))
            nn.init.normal_(self.pos_conv.weight, mean=0, std=std)
            nn.init.constant_(self.pos_conv.bias, 0)
            self.pos_conv = nn.utils.weight_norm(self.pos_conv, name="weight", dim=2)
            self.pos_conv = nn.Sequential(self.pos_conv, SamePad(4), nn.GELU())
            self.encoder = nn.TransformerEncoderLayer(embed, 2, 16, dropout=0.0, activation="gelu",
                                                      batch_first=True)
            self.quantizer = GumbelVectorQuantizer(dim=conv_dim, num_vars=5, temp=(2, 0.5, 0.999995), groups=2,
                                                   combine_groups=False, vq_dim=final_dim, time_first=True)
            self.project_q = nn.Linear(final_dim, final_dim)
            self.final_proj = nn.Linear(embed, final_dim)
            self.n_negatives, self.mask_prob, self.mask_length = n_negatives, mask_prob, mask_length
            self.logit_temp = 0.1

        def sample_negatives(self, y, num):
            bsz, tsz, fsz = y.shape
            y = y.view(-1, fsz)  # BTC => (BxT)C
            high = tsz
            with torch.no_grad():
                assert high > 1, f"{bsz, tsz, fsz}"
                tszs = buffered_arange(num).unsqueeze(-1).expand(-1, self.n_negatives).flatten()
                neg_idxs = torch.tensor(rng.integers(0, high - 1, (bsz, self.n_negatives * num)))
                neg_idxs[neg_idxs >= tszs] += 1
            for i in range(1, bsz):
                neg_idxs[i] += i * high
            negs = y[neg_idxs.view(-1)]
            negs = negs.view(bsz, num, self.n_negatives, fsz).permute(2, 0, 1, 3)  # to NxBxTxC
            return negs, neg_idxs

        def compute_preds(self, x, y, negatives):
            neg_is_pos = (y == negatives).all(-1)
            y = y.unsqueeze(0)
            targets = torch.cat([y, negatives], dim=0)
            logits = torch.cosine_similarity(x.float(), targets.float(), dim=-1)
            logits = logits / self.logit_temp
            logits = logits.type_as(x)
            if neg_is_pos.any():
                logits[1:][neg_is_pos] = float("-inf")
            return logits

        def forward(self, source):
            x = source.unsqueeze(1)  # BxT -> BxCxT
            for conv in self.feature_extractor:
                x = conv(x)
            features = x
            features_pen = features.float().pow(2).mean()
            features = features.transpose(1, 2)
            features = self.layer_norm(features)
            unmasked_features = features.clone()
            features = self.post_extract_proj(features)
            B, T, C = features.shape
            mask_indices = torch.from_numpy(compute_mask_indices((B, T), self.mask_prob, self.mask_length,
                                                                 min_masks=2)).to(features.device)
            x = features
            x[mask_indices] = self.mask_emb
            x_conv = self.pos_conv(x.transpose(1, 2))
            x = x + x_conv.transpose(1, 2)
            x = self.encoder(x)
            x = x[mask_indices].view(x.size(0), -1, x.size(-1))
            y = unmasked_features[mask_indices].view(unmasked_features.size(0), -1, unmasked_features.size(-1))
            q = self.quantizer(y, produce_targets=False)
            y = self.project_q(q["x"])
            negs, _ = self.sample_negatives(y, y.size(1))
            x = self.final_proj(x)
            x = self.compute_preds(x, y, negs)
            return {"x": x, "features_pen": features_pen, "mask_indices": mask_indices,
                    "prob_perplexity": q["prob_perplexity"], "code_perplexity": q["code_perplexity"],
                    "num_vars": q["num_vars"], "temp": q["temp"]}

    model = Wav2Vec2Model()
    init = load(m, model, state)
    model.train()
    model.quantizer.eval()  # its hard codes: training's Gumbel noise is drawn by each library's generator
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    losses = []
    for step in range(2):
        source = torch.tensor(normal(rng, 2, 62))
        net_output = model(source)
        logits = net_output["x"]
        logits = logits.transpose(0, 2)
        logits = logits.reshape(-1, logits.size(-1))
        target = logits.new_zeros(logits.size(0), dtype=torch.long)
        loss = F.cross_entropy(logits, target, reduction="sum")
        sample_size = target.numel()
        extra = [(net_output["num_vars"] - net_output["prob_perplexity"]) / net_output["num_vars"],
                 net_output["features_pen"]]
        for p, coef in zip(extra, [0.1, 10]):
            loss += coef * p.float() * sample_size
        optimizer.zero_grad()
        (loss / sample_size).backward()
        optimizer.step()
        model.quantizer.set_num_updates(step + 1)
        losses += [loss.item(), net_output["code_perplexity"].item(), float(net_output["temp"]),
                   torch.isinf(net_output["x"]).sum().item()]
    return init, losses + summary(model.parameters())


def test_wav2vec2_pretraining():
    compare(wav2vec2_pretraining)


# (j) HongyangGao/Graph-U-Nets (src/utils/ops.py's GraphUnet, GCN, Pool, Unpool, top_k_graph, norm_g; the
# classifier's readout): dense adjacency matrices, gPool by torch.topk(scores, max(2, int(k * num_nodes))) and
# h[idx, :] scaled by the gate values, the 2-hop graph by g.bool().float() squared and .bool().float() again,
# indexed by un_g[idx, :][:, idx] and row-normalised by torch.sum(g, 1), gUnpool by h.new_zeros([n, d]) and
# new_h[idx] = h (an index_put of a tensor that needs grad), skip connections by h.add(...), a readout of
# torch.max(h, 0)[0], sum and mean, Adam and cross_entropy
def graph_unet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(11)

    def norm_g(g):
        degrees = torch.sum(g, 1)
        g = g / degrees
        return g

    def top_k_graph(scores, g, h, k):
        num_nodes = g.shape[0]
        values, idx = torch.topk(scores, max(2, int(k * num_nodes)))
        new_h = h[idx, :]
        values = torch.unsqueeze(values, -1)
        new_h = torch.mul(new_h, values)
        un_g = g.bool().float()
        un_g = torch.matmul(un_g, un_g).bool().float()
        un_g = un_g[idx, :]
        un_g = un_g[:, idx]
        g = norm_g(un_g)
        return g, new_h, idx

    class GCN(nn.Module):
        def __init__(self, in_dim, out_dim, act, p):
            super(GCN, self).__init__()
            self.proj = nn.Linear(in_dim, out_dim)
            self.act = act
            self.drop = nn.Dropout(p=p) if p > 0.0 else nn.Identity()

        def forward(self, g, h):
            h = self.drop(h)
            h = torch.matmul(g, h)
            h = self.proj(h)
            h = self.act(h)
            return h

    class Pool(nn.Module):
        def __init__(self, k, in_dim, p):
            super(Pool, self).__init__()
            self.k = k
            self.sigmoid = nn.Sigmoid()
            self.proj = nn.Linear(in_dim, 1)
            self.drop = nn.Dropout(p=p) if p > 0 else nn.Identity()

        def forward(self, g, h):
            Z = self.drop(h)
            weights = self.proj(Z).squeeze()
            scores = self.sigmoid(weights)
            return top_k_graph(scores, g, h, self.k)

    class Unpool(nn.Module):
        def __init__(self, *args):
            super(Unpool, self).__init__()

        def forward(self, g, h, pre_h, idx):
            new_h = h.new_zeros([g.shape[0], h.shape[1]])
            new_h[idx] = h
            return g, new_h

    class GraphUnet(nn.Module):
        def __init__(self, ks, in_dim, out_dim, dim, act, drop_p):
            super(GraphUnet, self).__init__()
            self.ks = ks
            self.bottom_gcn = GCN(dim, dim, act, drop_p)
            self.down_gcns = nn.ModuleList()
            self.up_gcns = nn.ModuleList()
            self.pools = nn.ModuleList()
            self.unpools = nn.ModuleList()
            self.l_n = len(ks)
            for i in range(self.l_n):
                self.down_gcns.append(GCN(dim, dim, act, drop_p))
                self.up_gcns.append(GCN(dim, dim, act, drop_p))
                self.pools.append(Pool(ks[i], dim, drop_p))
                self.unpools.append(Unpool(dim, dim, drop_p))

        def forward(self, g, h):
            adj_ms = []
            indices_list = []
            down_outs = []
            hs = []
            org_h = h
            for i in range(self.l_n):
                h = self.down_gcns[i](g, h)
                adj_ms.append(g)
                down_outs.append(h)
                g, h, idx = self.pools[i](g, h)
                indices_list.append(idx)
            h = self.bottom_gcn(g, h)
            for i in range(self.l_n):
                up_idx = self.l_n - i - 1
                g, idx = adj_ms[up_idx], indices_list[up_idx]
                g, h = self.unpools[i](g, h, down_outs[up_idx], idx)
                h = self.up_gcns[i](g, h)
                h = h.add(down_outs[up_idx])
                hs.append(h)
            h = h.add(org_h)
            hs.append(h)
            return hs

    class GNet(nn.Module):
        def __init__(self, in_dim, n_classes, l_dim=8, h_dim=8):
            super(GNet, self).__init__()
            self.n_act = nn.ELU()
            self.s_gcn = GCN(in_dim, l_dim, self.n_act, 0.0)
            self.g_unet = GraphUnet([0.8, 0.6], l_dim, l_dim, l_dim, self.n_act, 0.0)
            self.out_l_1 = nn.Linear(3 * l_dim * 3, h_dim)
            self.out_l_2 = nn.Linear(h_dim, n_classes)

        def forward(self, gs, hs, labels):
            hs = self.embed(gs, hs)
            logits = self.classify(hs)
            return self.metric(logits, labels)

        def embed(self, gs, hs):
            o_hs = []
            for g, h in zip(gs, hs):
                h = self.embed_one(g, h)
                o_hs.append(h)
            hs = torch.stack(o_hs, 0)
            return hs

        def embed_one(self, g, h):
            g = norm_g(g)
            h = self.s_gcn(g, h)
            hs = self.g_unet(g, h)
            h = self.readout(hs)
            return h

        def readout(self, hs):
            h_max = [torch.max(h, 0)[0] for h in hs]
            h_sum = [torch.sum(h, 0) for h in hs]
            h_mean = [torch.mean(h, 0) for h in hs]
            h = torch.cat(h_max + h_sum + h_mean)
            return h

        def classify(self, h):
            h = self.out_l_1(h)
            h = self.n_act(h)
            h = self.out_l_2(h)
            return F.log_softmax(h, dim=1)

        def metric(self, logits, labels):
            loss = F.nll_loss(logits, labels)
            _, preds = torch.max(logits, 1)
            acc = torch.mean((preds == labels).float())
            return loss, acc

    model = GNet(3, 2)
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, amsgrad=True, weight_decay=8e-4)
    losses = []
    for step in range(2):
        gs, hs = [], []
        for n in (6, 7, 5):
            a = np.triu((rng.uniform(size=(n, n)) < 0.5).astype(np.float32), 1)
            a = a + a.T + np.eye(n, dtype=np.float32)
            gs.append(torch.tensor(a))
            hs.append(torch.tensor(normal(rng, n, 3)))
        labels = torch.tensor(rng.integers(0, 2, 3))
        loss, acc = model(gs, hs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item(), acc.item()]
    return init, losses + summary(model.parameters())


def test_graph_unet():
    compare(graph_unet)


# (k) message passing as PyG writes it without torch_scatter (torch_geometric/utils/softmax.py and scatter.py on
# torch >= 1.12, nn/conv/gat_conv.py, nn/conv/sage_conv.py with aggr="max", nn/pool/glob.py): self loops by a cat of
# torch.arange stacked twice, attention logits gathered at both ends, a segment softmax by
# scatter_reduce(..., reduce="amax", include_self=False) of an expanded index and scatter_add_, messages summed by
# index_add_, the max aggregation by index_reduce_(0, dst, x[src], "amax", include_self=False) (nodes with no
# neighbour keep 0), global max and mean pools by index_reduce_ and scatter_reduce(reduce="mean"), Adam, NLL
def pyg_scatter_reduce_gnn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(12)

    def softmax(src, index, num_nodes):
        index_e = index.view(-1, 1).expand_as(src)
        src_max = src.new_zeros(num_nodes, src.size(1)).scatter_reduce(0, index_e, src.detach(), reduce="amax",
                                                                       include_self=False)
        out = (src - src_max.index_select(0, index)).exp()
        out_sum = src.new_zeros(num_nodes, src.size(1)).scatter_add_(0, index_e, out) + 1e-16
        return out / out_sum.index_select(0, index)

    class GATConv(nn.Module):
        def __init__(self, in_channels, out_channels, heads=2, negative_slope=0.2):
            super().__init__()
            self.heads, self.out_channels, self.negative_slope = heads, out_channels, negative_slope
            self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
            self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
            self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
            self.bias = nn.Parameter(torch.empty(heads * out_channels))
            nn.init.xavier_uniform_(self.lin.weight)
            nn.init.xavier_uniform_(self.att_src)
            nn.init.xavier_uniform_(self.att_dst)
            nn.init.zeros_(self.bias)

        def forward(self, x, edge_index):
            H, C = self.heads, self.out_channels
            N = x.size(0)
            loop_index = torch.arange(0, N, dtype=torch.long, device=x.device)
            edge_index = torch.cat([edge_index, loop_index.unsqueeze(0).repeat(2, 1)], dim=1)
            src, dst = edge_index[0], edge_index[1]
            x = self.lin(x).view(-1, H, C)
            alpha_src = (x * self.att_src).sum(dim=-1)
            alpha_dst = (x * self.att_dst).sum(dim=-1)
            alpha = alpha_src[src] + alpha_dst[dst]
            alpha = F.leaky_relu(alpha, self.negative_slope)
            alpha = softmax(alpha, dst, N)
            msg = x[src] * alpha.unsqueeze(-1)
            out = torch.zeros_like(x).index_add_(0, dst, msg)
            return out.view(-1, H * C) + self.bias

    class SAGEConv(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.lin_l = nn.Linear(in_channels, out_channels)
            self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

        def forward(self, x, edge_index):
            src, dst = edge_index
            aggr = x.new_zeros(x.size(0), x.size(1)).index_reduce_(0, dst, x[src], "amax", include_self=False)
            return self.lin_l(aggr) + self.lin_r(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GATConv(3, 4, heads=2)
            self.conv2 = SAGEConv(8, 8)
            self.lin = nn.Linear(16, 3)

        def forward(self, x, edge_index, batch, num_graphs):
            x = F.elu(self.conv1(x, edge_index))
            x = F.relu(self.conv2(x, edge_index))
            mx = x.new_zeros(num_graphs, x.size(1)).index_reduce_(0, batch, x, "amax", include_self=False)
            mean = x.new_zeros(num_graphs, x.size(1)).scatter_reduce(0, batch.view(-1, 1).expand_as(x), x,
                                                                     reduce="mean", include_self=False)
            return F.log_softmax(self.lin(torch.cat([mx, mean], dim=1)), dim=-1)

    model = Net()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=5e-4)
    losses = []
    sizes = [5, 4, 6]
    batch = torch.tensor(np.repeat(np.arange(3), sizes))
    for step in range(2):
        edges, start = [], 0
        for n in sizes:
            e = rng.integers(0, n, (2, 2 * n))
            edges.append(e[:, e[0] != e[1]] + start)
            start += n
        edge_index = torch.tensor(np.concatenate(edges, 1))
        x = torch.tensor(normal(rng, sum(sizes), 3))
        y = torch.tensor(rng.integers(0, 3, 3))
        out = model(x, edge_index, batch, 3)
        loss = F.nll_loss(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    return init, losses + summary(model.parameters())


def test_pyg_scatter_reduce_gnn():
    compare(pyg_scatter_reduce_gnn)


# (l) facebookresearch/SlowFast (slowfast/datasets/utils.py's pack_pathway_output, slowfast/models/stem_helper.py,
# slowfast/models/video_model_builder.py's FuseFastToSlow, head_helper.py's ResNetBasicHead): the slow pathway's
# frames by torch.index_select(frames, 1, torch.linspace(0, T - 1, T // alpha).long()), Conv3d stems with
# kernels [5, 7, 7] and [1, 7, 7] and MaxPool3d, the fast-to-slow lateral Conv3d with a temporal stride of alpha and
# padding [fusion_kernel // 2, 0, 0], torch.cat along channels, per-pathway nn.AdaptiveAvgPool3d((1, 1, 1)) and
# permute((0, 2, 3, 4, 1)) before the projection, softmax in eval only, SGD with nesterov and a label-smoothed
# cross entropy
def slowfast(m, state=None):
    torch, nn = m.torch, m.nn
    torch.manual_seed(0)
    rng = np.random.default_rng(13)
    alpha, beta_inv, fusion_conv_channel_ratio, fusion_kernel = 4, 4, 2, 5

    def pack_pathway_output(frames):
        fast_pathway = frames
        slow_pathway = torch.index_select(frames, 1, torch.linspace(0, frames.shape[1] - 1,
                                                                    frames.shape[1] // alpha).long())
        return [slow_pathway, fast_pathway]

    class ResNetBasicStem(nn.Module):
        def __init__(self, dim_in, dim_out, kernel, stride, padding):
            super().__init__()
            self.conv = nn.Conv3d(dim_in, dim_out, kernel, stride=stride, padding=padding, bias=False)
            self.bn = nn.BatchNorm3d(dim_out, eps=1e-5, momentum=0.1)
            self.relu = nn.ReLU(True)
            self.pool_layer = nn.MaxPool3d(kernel_size=[1, 3, 3], stride=[1, 2, 2], padding=[0, 1, 1])

        def forward(self, x):
            return self.pool_layer(self.relu(self.bn(self.conv(x))))

    class FuseFastToSlow(nn.Module):
        def __init__(self, dim_in, fusion_conv_channel_ratio, fusion_kernel, alpha, eps=1e-5, bn_mmt=0.1):
            super(FuseFastToSlow, self).__init__()
            self.conv_f2s = nn.Conv3d(dim_in, dim_in * fusion_conv_channel_ratio, kernel_size=[fusion_kernel, 1, 1],
                                      stride=[alpha, 1, 1], padding=[fusion_kernel // 2, 0, 0], bias=False)
            self.bn = nn.BatchNorm3d(dim_in * fusion_conv_channel_ratio, eps=eps, momentum=bn_mmt)
            self.relu = nn.ReLU(True)

        def forward(self, x):
            x_s = x[0]
            x_f = x[1]
            fuse = self.conv_f2s(x_f)
            fuse = self.bn(fuse)
            fuse = self.relu(fuse)
            x_s_fuse = torch.cat([x_s, fuse], 1)
            return [x_s_fuse, x_f]

    class ResNetBasicHead(nn.Module):
        def __init__(self, dim_in, num_classes, dropout_rate=0.0):
            super(ResNetBasicHead, self).__init__()
            self.num_pathways = len(dim_in)
            for pathway in range(self.num_pathways):
                avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))
                self.add_module("pathway{}_avgpool".format(pathway), avg_pool)
            if dropout_rate > 0.0:
                self.dropout = nn.Dropout(dropout_rate)
            self.projection = nn.Linear(sum(dim_in), num_classes, bias=True)
            self.act = nn.Softmax(dim=4)

        def forward(self, inputs):
            pool_out = []
            for pathway in range(self.num_pathways):
                m_ = getattr(self, "pathway{}_avgpool".format(pathway))
                pool_out.append(m_(inputs[pathway]))
            x = torch.cat(pool_out, 1)
            x = x.permute((0, 2, 3, 4, 1))  # (N, C, T, H, W) -> (N, T, H, W, C)
            if hasattr(self, "dropout"):
                x = self.dropout(x)
            x = self.projection(x)
            if not self.training:
                x = self.act(x)
                x = x.mean([1, 2, 3])
            x = x.view(x.shape[0], -1)
            return x

    class SlowFast(nn.Module):
        def __init__(self, width=8, num_classes=5):
            super().__init__()
            self.s1_slow = ResNetBasicStem(3, width, [1, 7, 7], [1, 2, 2], [0, 3, 3])
            self.s1_fast = ResNetBasicStem(3, width // beta_inv, [5, 7, 7], [1, 2, 2], [2, 3, 3])
            self.s1_fuse = FuseFastToSlow(width // beta_inv, fusion_conv_channel_ratio, fusion_kernel, alpha)
            slow_in = width + width // beta_inv * fusion_conv_channel_ratio
            self.s2_slow = nn.Sequential(nn.Conv3d(slow_in, width, [1, 3, 3], padding=[0, 1, 1], bias=False),
                                         nn.BatchNorm3d(width), nn.ReLU(inplace=True))
            self.s2_fast = nn.Sequential(nn.Conv3d(width // beta_inv, width // beta_inv, [3, 3, 3], padding=1,
                                                   bias=False), nn.BatchNorm3d(width // beta_inv),
                                         nn.ReLU(inplace=True))
            self.head = ResNetBasicHead([width, width // beta_inv], num_classes, dropout_rate=0.0)

        def forward(self, x):
            x = [self.s1_slow(x[0]), self.s1_fast(x[1])]
            x = self.s1_fuse(x)
            x = [self.s2_slow(x[0]), self.s2_fast(x[1])]
            return self.head(x)

    model = SlowFast()
    init = load(m, model, state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, dampening=0.0,
                                nesterov=True)
    loss_fun = nn.CrossEntropyLoss(reduction="mean", label_smoothing=0.1)
    losses = []
    for step in range(2):
        clips = [pack_pathway_output(torch.tensor(normal(rng, 3, 8, 16, 16))) for _ in range(3)]  # C T H W each
        inputs = [torch.stack([clip[i] for clip in clips]) for i in range(2)]  # the loader's default collate
        labels = torch.tensor(rng.integers(0, 5, 3))
        preds = model(inputs)
        loss = loss_fun(preds, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [loss.item()]
    model.eval()
    with torch.no_grad():
        probs = model(inputs)
    losses += [probs.sum().item(), probs.max().item()]
    return init, losses + summary(model.parameters())


def test_slowfast():
    compare(slowfast)
