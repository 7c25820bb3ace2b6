"""Public training code the earlier files leave out, written from memory in its sources' styles and ported by its
imports alone, as test_ported_scripts.py: ducha-aiki's LSUV initialisation (numpy's SVD orthonormal start, a forward
hook per layer, rescaling by .data to unit variance); majumderb's ReZero encoder layer (a zero residual weight, no
LayerNorm, an EMA copy by copy.deepcopy through the layer's own __setstate__); vikasverma1077's manifold mixup (a
PreActResNet mixing at a drawn layer, one-hot targets by scatter_, BCELoss of softmax); mlpen's Nystromformer
attention (segment-mean landmarks, a Newton-Schulz pseudo-inverse, a depthwise convolution on v); a script's
instrumentation by hooks (the global register_module_forward_hook, prepend=, always_call=, a with_kwargs pre-hook
rewriting a keyword, full backward pre-hooks and hooks rewriting gradients or reading both inputs' gradients of a
two-input block, register_multi_grad_hook); checkpoint
surgery (torchvision's DenseNet key regex, a checkpoint without num_batches_tracked, timm's adapt_input_conv,
strict=False's reported keys, state-dict hooks, optimizer state moved to the device on resume); torch 2's
autograd.Function with setup_context and vmap beside once_differentiable, set_materialize_grads and
mark_non_differentiable; External-Attention-pytorch's blocks (external, shuffle, A^2-Nets, polarized, DANet's position
and channel attention); DingXiaoH's Diverse Branch Block trained and folded into one convolution; the CUDA AMP
examples page's loops with GradScaler("cpu") (accumulation, unscaled clipping, two models and optimizers on one
scaler, a skipped step held back from the scheduler, the update rule retuned, the scaler resumed); timm's TF-same
EfficientNet pieces with RMSpropTF beside torch's centered RMSprop; torch 2.x module idioms (nn.Buffer, skip_init, a
model built on the meta device and materialised by to_empty, load_state_dict(assign=True), get_extra_state and
set_extra_state, get_parameter and get_buffer); BoTNet's relative-position MHSA, SCConv and Vision Permutator's
WeightedPermuteMLP; a sequence pipeline (IterableDatasets joined by +, ConcatDataset by +, pad_sequence in a
collate_fn, a packed GRU, unpad_sequence, PairwiseDistance); konstmish's Prodigy under CosineAnnealingLR;
eladhoffer's quantized.pytorch (an InplaceFunction quantiser, running min and max, a checkpoint through
torch.serialization.add_safe_globals); a pre-norm ViT on torch's _get_clones and _get_activation_fn; RevTorch's
reversible blocks (backward() called inside a Function's backward) with a vendored reentrant CheckpointFunction
(detach_variable, check_backward_validity); DeepDream's input ascent and SmoothGrad; OHEM, GHM-C, Taylor
cross-entropy, Poly-1 and symmetric cross-entropy; rtdl's FT-Transformer and deep ensembles with FGSM inputs; torch
1.x's multi_head_attention_forward vendored as DETR-family repositories do (torch.overrides first); DP-SGD by
torch.func with its batch norms replaced and batches through collate_fn_map; an AdamW fork on
torch.optim._functional with its own __setstate__, deep-copied best snapshots and a `torch.__version__ >= (1, 12)`
gate; SNIP (forward replaced per instance by types.MethodType, masks by prune.custom_from_mask) and SynFlow's scores
at initialisation; a network grown mid-run whose new parameters are appended to the optimizer's group by hand, with
Adam's state reset at a warm restart by a fresh defaultdict and one layer's by state[p] = {}. Each runs in tnet,
then in torch from tnet's initial weights (state_dict through numpy), and the losses, and the weights summed into a
few numbers, agree. Numpy draws what a script draws; shapes are tiny and runs take one to five steps. Where Adam
would normalise a gradient that is rounding alone (an attention key's bias, which softmax ignores) the script takes
SGD, as it says.

Fixed in tnet on the way (each with its unit test; the serialization, _get_activation_fn and
NonDynamicallyQuantizableLinear paths, InplaceFunction, the dataset and collate paths, detach_variable and
tnet.overrides, found here too, came in with the left2 branch):
- GradScaler lacked torch's get_growth_factor, get_backoff_factor, get_growth_interval and their setters: a script
  reading the update rule, or retuning it after a resume, raised AttributeError (test_amp.py).
- Module and Optimizer had no __setstate__: a layer or optimizer whose own __setstate__ calls
  super().__setstate__(state) (torch's Transformer layers copied into repositories, AdaBelief, RAdam) failed
  copy.deepcopy with AttributeError (test_nn.py).
- swa_utils.update_bn left BatchNorm3d's statistics as they were (its tuple of batch norms lacked the class); it now
  takes torch's whole _BatchNorm family through tnet.nn.BATCH_NORMS, which torch.func.replace_all_batch_norm_modules_,
  missing before, uses too (test_swa_foreach.py, test_func.py).
- A full backward hook's grad_input held None for a tensor input that needs no gradient beside one that does (a
  mask), where torch's holds zeros: a monitor reading it failed; a module whose output is neither a tensor nor a
  tuple ran its backward hooks with an empty grad_output, where torch's warns and runs none (test_pool_extras.py).
- An optimizer with tnet's fused step raised KeyError at the step after a parameter was appended to a group's
  "params" by hand or its state dropped by hand (optimizer.state.clear(), a fresh defaultdict, state[p] = {}); the
  step now rebuilds the optimizer around the state that is whole and the rest starts afresh, as torch makes state at
  a parameter's first step (test_optimizers.py).
- torch.random.default_generator, torch.optim._functional and torch.types were missing by those paths (test_idioms.py,
  test_optimizers.py); tnet.__version__ is torch's TorchVersion, so `torch.__version__ >= (1, 10)` compares (a plain
  str raised TypeError) (test_idioms.py).

Found and left as they are: embedding_bag(include_last_offset=True, mode="mean") with a last offset short of the
input's end divides in torch by a count that includes the trailing indices its sum leaves out (pytorch issue
#191965, open); tnet's mean is the sum over the bag's own count, consistent with its sum and max. tnet's
default_collate makes Python floats float32 and torch.tensor of an int32 array int64, its saved_tensors_hooks raises
NotImplementedError and tnet.save refuses whole modules (no pickle), as its README says; an integer matmul raises (its
GEMMs take floating-point operands)."""
import copy
import importlib
import math
import os
from collections import OrderedDict

import numpy as np

from helpers import compare, load, summary


def normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def step(m, model, optimizer, x, y, loss_fn=None):
    optimizer.zero_grad()
    out = model(x)
    loss = (loss_fn or m.F.cross_entropy)(out, y)
    loss.backward()
    optimizer.step()
    return loss.item()


# (a) ducha-aiki/LSUVinit's LSUV.py: an orthonormal start by numpy's SVD of a gaussian (svd_orthonormal), then each
# conv and linear layer in turn, through a forward hook that keeps its output, rescaled by .data until the output's
# variance is one within a tolerance; the hook removed when the layer is done
def lsuv(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    gg = {'hook_position': 0, 'total_fc_conv_layers': 0, 'done_counter': -1, 'hook': None, 'act_dict': {},
          'counter_to_apply_correction': 0, 'correction_needed': False, 'current_coef': 1.0}

    def svd_orthonormal(shape):
        if len(shape) < 2:
            raise RuntimeError("Only shapes of length 2 or more are supported.")
        flat_shape = (shape[0], int(np.prod(shape[1:])))
        a = rng.standard_normal(flat_shape)
        u, _, v = np.linalg.svd(a, full_matrices=False)
        q = u if u.shape == flat_shape else v
        return q.reshape(shape).astype(np.float32)

    def store_activations(self, input, output):
        gg['act_dict'] = output.data.cpu().numpy()

    def add_current_hook(m_):
        if gg['hook'] is not None:
            return
        if isinstance(m_, nn.Conv2d) or isinstance(m_, nn.Linear):
            if gg['hook_position'] > gg['done_counter']:
                gg['hook'] = m_.register_forward_hook(store_activations)
            else:
                gg['hook_position'] += 1

    def count_conv_fc_layers(m_):
        if isinstance(m_, nn.Conv2d) or isinstance(m_, nn.Linear):
            gg['total_fc_conv_layers'] += 1

    def remove_hooks(hooks):
        for h in hooks:
            h.remove()

    def orthogonal_weights_init(m_):
        if isinstance(m_, nn.Conv2d) or isinstance(m_, nn.Linear):
            if hasattr(m_, 'weight_v'):
                return
            w_ortho = svd_orthonormal(m_.weight.data.cpu().numpy().shape)
            m_.weight.data = torch.from_numpy(w_ortho)
            if m_.bias is not None:
                nn.init.constant_(m_.bias, 0)

    def apply_weights_correction(m_):
        if gg['hook'] is None:
            return
        if not gg['correction_needed']:
            return
        if isinstance(m_, nn.Conv2d) or isinstance(m_, nn.Linear):
            if gg['counter_to_apply_correction'] < gg['hook_position']:
                gg['counter_to_apply_correction'] += 1
            else:
                m_.weight.data *= float(gg['current_coef'])
                gg['correction_needed'] = False

    def LSUVinit(model, data, needed_std=1.0, std_tol=0.1, max_attempts=10, do_orthonorm=True):
        model.eval()
        model.apply(count_conv_fc_layers)
        if do_orthonorm:
            model.apply(orthogonal_weights_init)
        for layer_idx in range(gg['total_fc_conv_layers']):
            model.apply(add_current_hook)
            model(data)
            current_std = gg['act_dict'].std()
            attempts = 0
            while np.abs(current_std - needed_std) > std_tol:
                gg['current_coef'] = needed_std / (current_std + 1e-8)
                gg['correction_needed'] = True
                model.apply(apply_weights_correction)
                model(data)
                current_std = gg['act_dict'].std()
                attempts += 1
                if attempts > max_attempts:
                    break
            if gg['hook'] is not None:
                gg['hook'].remove()
            gg['done_counter'] += 1
            gg['counter_to_apply_correction'] = 0
            gg['hook_position'] = 0
            gg['hook'] = None
        model.train()
        return model

    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 5))
    if state is None:
        model.apply(orthogonal_weights_init)
    init = load(m, model, state)
    data = torch.tensor(normal(np.random.default_rng(1), 4, 3, 8, 8))
    LSUVinit(model, data, do_orthonorm=False)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batch = np.random.default_rng(2)
    losses = [step(m, model, optimizer, torch.tensor(normal(batch, 4, 3, 8, 8)),
                   torch.tensor(batch.integers(0, 5, 4))) for _ in range(2)]
    return init, losses + summary(model.parameters())


def test_lsuv():
    compare(lsuv)


# (b) majumderb/rezero's ReZero encoder layer: self-attention and a feed-forward each added through a residual weight
# nn.Parameter(torch.Tensor([0])), so the first step's gradient reaches only the residual weights (Adam steps the
# others by zero), with no LayerNorm; its src_mask by float('-inf') masked_fill of a triu
def rezero(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(3)

    class RZTXEncoderLayer(nn.Module):
        def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu'):
            super().__init__()
            self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
            self.linear1 = nn.Linear(d_model, dim_feedforward)
            self.dropout = nn.Dropout(dropout)
            self.linear2 = nn.Linear(dim_feedforward, d_model)
            self.dropout1 = nn.Dropout(dropout)
            self.dropout2 = nn.Dropout(dropout)
            self.resweight = nn.Parameter(torch.Tensor([0]))
            if activation == "relu":
                self.activation = F.relu
            elif activation == "gelu":
                self.activation = F.gelu

        def __setstate__(self, state):
            if 'activation' not in state:
                state['activation'] = F.relu
            super().__setstate__(state)

        def forward(self, src, src_mask=None, src_key_padding_mask=None):
            src2 = src
            src2 = self.self_attn(src2, src2, src2, attn_mask=src_mask, key_padding_mask=src_key_padding_mask)
            src2 = src2[0]
            src2 = src2 * self.resweight
            src = src + self.dropout1(src2)
            src2 = src
            src2 = self.linear2(self.dropout(self.activation(self.linear1(src2))))
            src2 = src2 * self.resweight
            src = src + self.dropout2(src2)
            return src

    class Model(nn.Module):
        def __init__(self, ntoken=11, d=8, nlayers=2):
            super().__init__()
            self.encoder = nn.Embedding(ntoken, d)
            self.layers = nn.ModuleList([RZTXEncoderLayer(d, 2, 16, dropout=0.0, activation='gelu')
                                         for _ in range(nlayers)])
            self.decoder = nn.Linear(d, ntoken)

        def _generate_square_subsequent_mask(self, sz):
            mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
            mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))
            return mask

        def forward(self, src):
            mask = self._generate_square_subsequent_mask(src.size(0))
            x = self.encoder(src) * math.sqrt(8)
            for layer in self.layers:
                x = layer(x, src_mask=mask)
            return self.decoder(x)

    model = Model()
    init = load(m, model, state)
    # an EMA of the weights in a deep copy: the layers' own __setstate__ runs, calling Module's
    ema = copy.deepcopy(model)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(3):
        data = torch.tensor(rng.integers(0, 11, (5, 2)))
        target = torch.tensor(rng.integers(0, 11, (5, 2)))
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output.view(-1, 11), target.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        with torch.no_grad():
            for ema_p, p in zip(ema.parameters(), model.parameters()):
                ema_p.mul_(0.9).add_(p.detach(), alpha=0.1)
        losses.append(loss.item())
    assert ema.layers[0].activation is F.gelu
    return init, (losses + [float(layer.resweight.item()) for layer in model.layers] + summary(model.parameters())
                  + summary(ema.parameters()))


def test_rezero():
    compare(rezero)


# (c) vikasverma1077/manifold_mixup's PreActResNet forward(x, target, mixup_hidden, layer_mix): the batch mixed at
# a layer the script draws (0 = the input), targets one-hot by scatter_ and mixed alike by mixup_process with a
# permutation, the loss BCELoss of softmax against the mixed one-hot targets
def manifold_mixup(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(4)

    def to_one_hot(inp, num_classes):
        y_onehot = torch.FloatTensor(inp.size(0), num_classes)
        y_onehot.zero_()
        y_onehot.scatter_(1, inp.unsqueeze(1).data.cpu(), 1)
        return y_onehot

    def mixup_process(out, target_reweighted, lam, indices):
        out = out * lam + out[indices] * (1 - lam)
        target_reweighted = target_reweighted * lam + target_reweighted[indices] * (1 - lam)
        return out, target_reweighted

    class PreActBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super(PreActBlock, self).__init__()
            self.bn1 = nn.BatchNorm2d(in_planes)
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            if stride != 1 or in_planes != self.expansion * planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False))

        def forward(self, x):
            out = F.relu(self.bn1(x))
            shortcut = self.shortcut(out) if hasattr(self, 'shortcut') else x
            out = self.conv1(out)
            out = self.conv2(F.relu(self.bn2(out)))
            out += shortcut
            return out

    class PreActResNet(nn.Module):
        def __init__(self, block, num_blocks, initial_channels, num_classes):
            super(PreActResNet, self).__init__()
            self.in_planes = initial_channels
            self.num_classes = num_classes
            self.conv1 = nn.Conv2d(3, initial_channels, kernel_size=3, stride=1, padding=1, bias=False)
            self.layer1 = self._make_layer(block, initial_channels, num_blocks[0], stride=1)
            self.layer2 = self._make_layer(block, initial_channels * 2, num_blocks[1], stride=2)
            self.bn = nn.BatchNorm2d(initial_channels * 2 * block.expansion)
            self.linear = nn.Linear(initial_channels * 2 * block.expansion, num_classes)

        def _make_layer(self, block, planes, num_blocks, stride):
            strides = [stride] + [1] * (num_blocks - 1)
            layers = []
            for stride in strides:
                layers.append(block(self.in_planes, planes, stride))
                self.in_planes = planes * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x, target=None, mixup_hidden=False, mixup_alpha=0.1, layer_mix=None, lam=None,
                    indices=None):
            if mixup_hidden:
                if layer_mix is None:
                    layer_mix = 0
                out = x
                target_reweighted = to_one_hot(target, self.num_classes)
                if layer_mix == 0:
                    out, target_reweighted = mixup_process(out, target_reweighted, lam=lam, indices=indices)
                out = self.conv1(out)
                out = self.layer1(out)
                if layer_mix == 1:
                    out, target_reweighted = mixup_process(out, target_reweighted, lam=lam, indices=indices)
                out = self.layer2(out)
                if layer_mix == 2:
                    out, target_reweighted = mixup_process(out, target_reweighted, lam=lam, indices=indices)
                out = F.relu(self.bn(out))
                out = F.avg_pool2d(out, out.size(2))
                out = out.view(out.size(0), -1)
                out = self.linear(out)
                return out, target_reweighted
            out = self.conv1(x)
            out = self.layer2(self.layer1(out))
            out = F.relu(self.bn(out))
            out = F.avg_pool2d(out, out.size(2))
            return self.linear(out.view(out.size(0), -1))

    model = PreActResNet(PreActBlock, [1, 1], 4, 5)
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    bce_loss = nn.BCELoss()
    softmax = nn.Softmax(dim=1)
    losses = []
    for layer_mix in (0, 1, 2):
        input = torch.tensor(normal(rng, 4, 3, 8, 8))
        target = torch.tensor(rng.integers(0, 5, 4))
        lam = float(rng.beta(2.0, 2.0))
        indices = torch.tensor(rng.permutation(4))
        output, reweighted_target = model(input, target, mixup_hidden=True, layer_mix=layer_mix, lam=lam,
                                          indices=indices)
        loss = bce_loss(softmax(output), reweighted_target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(input), target).item())
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_manifold_mixup():
    compare(manifold_mixup)


# (d) mlpen/Nystromformer's NystromAttention: landmarks as segment means of q and k, the Moore-Penrose pseudo-inverse
# of the landmark kernel by six Newton-Schulz iterations started from K^T / (max column sum * max row sum), and a
# depthwise convolution over the sequence on v as the residual
def nystromformer(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(5)

    class NystromAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.head_dim = config["head_dim"]
            self.num_head = config["num_head"]
            self.num_landmarks = config["num_landmarks"]
            self.seq_len = config["seq_len"]
            self.init_option = config.get("inv_init_coeff_option", "original")
            self.use_conv = "conv_kernel_size" in config
            if self.use_conv:
                self.conv = nn.Conv2d(in_channels=self.num_head, out_channels=self.num_head,
                                      kernel_size=(config["conv_kernel_size"], 1),
                                      padding=(config["conv_kernel_size"] // 2, 0), bias=False,
                                      groups=self.num_head)

        def forward(self, Q, K, V, mask):
            Q = Q * mask[:, None, :, None] / math.sqrt(math.sqrt(self.head_dim))
            K = K * mask[:, None, :, None] / math.sqrt(math.sqrt(self.head_dim))
            Q_landmarks = Q.reshape(-1, self.num_head, self.num_landmarks, self.seq_len // self.num_landmarks,
                                    self.head_dim).mean(dim=-2)
            K_landmarks = K.reshape(-1, self.num_head, self.num_landmarks, self.seq_len // self.num_landmarks,
                                    self.head_dim).mean(dim=-2)
            kernel_1 = torch.nn.functional.softmax(torch.matmul(Q, K_landmarks.transpose(-1, -2)), dim=-1)
            kernel_2 = torch.nn.functional.softmax(torch.matmul(Q_landmarks, K_landmarks.transpose(-1, -2)), dim=-1)
            kernel_3 = torch.nn.functional.softmax(
                torch.matmul(Q_landmarks, K.transpose(-1, -2)) - 1e9 * (1 - mask[:, None, None, :]), dim=-1)
            X = torch.matmul(torch.matmul(kernel_1, self.iterative_inv(kernel_2)), torch.matmul(kernel_3, V))
            if self.use_conv:
                X += self.conv(V * mask[:, None, :, None])
            return X

        def iterative_inv(self, mat, n_iter=6):
            I = torch.eye(mat.size(-1), device=mat.device)
            K = mat
            if self.init_option == "original":
                V = 1 / torch.max(torch.sum(K, dim=-2)) * K.transpose(-1, -2)
            else:
                V = 1 / torch.max(torch.sum(K, dim=-2), dim=-1).values[:, :, None, None] * K.transpose(-1, -2)
            for _ in range(n_iter):
                KV = torch.matmul(K, V)
                V = torch.matmul(0.25 * V, 13 * I - torch.matmul(KV, 15 * I - torch.matmul(KV, 7 * I - KV)))
            return V

    class Classifier(nn.Module):
        def __init__(self, dim=8, heads=2, seq_len=8, classes=3, option="original"):
            super().__init__()
            self.heads, self.head_dim = heads, dim // heads
            self.qkv = nn.Linear(dim, 3 * dim)
            self.attn = NystromAttention({"head_dim": dim // heads, "num_head": heads, "num_landmarks": 4,
                                          "seq_len": seq_len, "conv_kernel_size": 3,
                                          "inv_init_coeff_option": option})
            self.ff = nn.Linear(dim, dim)
            self.head = nn.Linear(dim, classes)

        def split_heads(self, X):
            X = X.reshape(X.size(0), X.size(1), self.heads, self.head_dim)
            return X.transpose(1, 2)

        def combine_heads(self, X):
            X = X.transpose(1, 2)
            return X.reshape(X.size(0), X.size(1), self.heads * self.head_dim)

        def forward(self, X, mask):
            Q, K, V = self.qkv(X).chunk(3, dim=-1)
            attn_out = self.attn(self.split_heads(Q), self.split_heads(K), self.split_heads(V), mask.float())
            X = X + self.ff(self.combine_heads(attn_out))
            X = (X * mask[:, :, None]).sum(dim=1) / mask.sum(dim=1, keepdim=True)
            return self.head(X)

    losses, params = [], []
    init = {}
    for option in ("original", "new"):
        model = Classifier(option=option)
        init[option] = load(m, model, None if state is None else state[option])
        optimizer = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
        for _ in range(2):
            X = torch.tensor(normal(rng, 2, 8, 8))
            mask = torch.tensor(np.array([[1] * 8, [1] * 6 + [0] * 2], dtype=np.float32))
            y = torch.tensor(rng.integers(0, 3, 2))
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(X, mask), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        params += summary(model.parameters())
    return init, losses + params


def test_nystromformer():
    compare(nystromformer)


# (e) a training script's instrumentation by hooks: fastai-style activation statistics for every module by the
# global nn.modules.module.register_module_forward_hook (removed after the first step), a forward hook prepended
# before another, one with always_call=True, a forward pre-hook with_kwargs rewriting a keyword argument,
# a full backward pre-hook scaling a layer's output gradient, a full backward hook scaling its input gradient,
# and torch.autograd.graph.register_multi_grad_hook that sees a block's gradients once all are computed
def module_hooks(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(6)

    class Gate(nn.Module):
        def forward(self, x, mask):
            return x * mask

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(4)
            self.gate = Gate()
            self.conv2 = nn.Conv2d(4, 6, 3, stride=2, padding=1)
            self.fc = nn.Linear(6, 5)

        def forward(self, x, scale=1.0):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.gate(x, (x.detach().mean(1, keepdim=True) > 0).float())
            x = F.relu(self.conv2(x))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)) * scale

    model = Net()
    init = load(m, model, state)
    stats = OrderedDict()
    order, grads_seen = [], []

    def record(module, inputs, output):
        if isinstance(output, torch.Tensor):
            name = type(module).__name__ + str(len(stats))
            stats[name] = (output.detach().mean().item(), output.detach().std().item())

    handle = nn.modules.module.register_module_forward_hook(record)
    model.fc.register_forward_hook(lambda mod, inp, out: order.append('second'))
    model.fc.register_forward_hook(lambda mod, inp, out: order.append('first'), prepend=True)
    model.conv2.register_forward_hook(lambda mod, inp, out: order.append('always'), always_call=True)

    def halve_scale(module, args, kwargs):
        kwargs = dict(kwargs)
        kwargs['scale'] = kwargs.get('scale', 1.0) * 0.5
        return args, kwargs

    model.register_forward_pre_hook(halve_scale, with_kwargs=True)
    model.conv2.register_full_backward_pre_hook(lambda mod, grad_output: (grad_output[0] * 2.0,))
    model.bn1.register_full_backward_hook(lambda mod, grad_input, grad_output: (grad_input[0] * 0.5,))
    # a gradient-norm monitor over both inputs of a two-input block (the mask's gradient: zeros, as torch's)
    gate_norms = []
    model.gate.register_full_backward_hook(
        lambda mod, grad_input, grad_output: gate_norms.append([g.norm().item() for g in grad_input]))
    torch.autograd.graph.register_multi_grad_hook(
        (model.conv1.weight, model.conv1.bias),
        lambda grads: grads_seen.append([g.abs().sum().item() for g in grads]))
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for i in range(2):
        x = torch.tensor(normal(rng, 4, 3, 6, 6))
        y = torch.tensor(rng.integers(0, 5, 4))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x, scale=3.0), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if i == 0:
            handle.remove()
    assert len(stats) == 6 and order == ['always', 'first', 'second'] * 2, (list(stats), order)
    assert len(grads_seen) == 2 and len(gate_norms) == 2 and gate_norms[0][1] == 0.0
    values = [v for pair in stats.values() for v in pair]
    return init, (losses + values + [v for g in grads_seen for v in g] + [v for g in gate_norms for v in g]
                  + summary(model.parameters()))


def test_module_hooks():
    compare(module_hooks)


# (f) loading other people's checkpoints: torchvision's DenseNet key fix by a regular expression (norm.1 ->
# norm1), a checkpoint from before BatchNorm counted batches (no num_batches_tracked: _load_from_state_dict fills
# it), timm's adapt_input_conv summing a 3-channel stem into a 1-channel one, the head left out and loaded with
# strict=False (the keys it reports), a state_dict hook adding a key and a load pre-hook removing it again, and the
# resume idiom that moves every optimizer state tensor to the device
def checkpoint_surgery(m, state=None):
    import re
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(7)

    class DenseLayer(nn.Module):
        def __init__(self, cin, growth):
            super().__init__()
            self.norm1 = nn.BatchNorm2d(cin)
            self.relu1 = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(cin, growth, 3, padding=1, bias=False)

        def forward(self, x):
            return torch.cat([x, self.conv1(self.relu1(self.norm1(x)))], 1)

    class Net(nn.Module):
        def __init__(self, in_chans=3, num_classes=5):
            super().__init__()
            self.features = nn.Sequential(OrderedDict([
                ('conv0', nn.Conv2d(in_chans, 4, 3, padding=1, bias=False)),
                ('denselayer1', DenseLayer(4, 2)), ('denselayer2', DenseLayer(6, 2)),
                ('norm5', nn.BatchNorm2d(8))]))
            self.classifier = nn.Linear(8, num_classes)

        def forward(self, x):
            out = F.relu(self.features(x), inplace=True)
            return self.classifier(F.adaptive_avg_pool2d(out, (1, 1)).flatten(1))

    def adapt_input_conv(in_chans, conv_weight):
        conv_type = conv_weight.dtype
        conv_weight = conv_weight.float()
        O, I, J, K = conv_weight.shape
        if in_chans == 1:
            if I > 3:
                assert conv_weight.shape[1] % 3 == 0
                conv_weight = conv_weight.reshape(O, I // 3, 3, J, K)
                conv_weight = conv_weight.sum(dim=2, keepdim=False)
            else:
                conv_weight = conv_weight.sum(dim=1, keepdim=True)
        conv_weight = conv_weight.to(conv_type)
        return conv_weight

    pretrained = Net()
    init = load(m, pretrained, state)
    # the published file: old layer names (norm.1, conv.1) and no num_batches_tracked
    published = OrderedDict()
    for k, v in pretrained.state_dict().items():
        if k.endswith('num_batches_tracked'):
            continue
        published[re.sub(r'(denselayer\d+)\.(norm|relu|conv)1', r'\1.\2.1', k)] = v.clone()

    pattern = re.compile(
        r'^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$')
    state_dict = published
    for key in list(state_dict.keys()):
        res = pattern.match(key)
        if res:
            new_key = res.group(1) + res.group(2)
            state_dict[new_key] = state_dict[key]
            del state_dict[key]
    state_dict['features.conv0.weight'] = adapt_input_conv(1, state_dict['features.conv0.weight'])
    del state_dict['classifier.weight'], state_dict['classifier.bias']

    model = Net(in_chans=1, num_classes=3)
    with torch.no_grad():
        model.classifier.weight.copy_(torch.tensor(normal(rng, 3, 8) * 0.3))
        model.classifier.bias.zero_()
    incompatible = model.load_state_dict(state_dict, strict=False)
    assert sorted(incompatible.missing_keys) == ['classifier.bias', 'classifier.weight'], incompatible
    assert incompatible.unexpected_keys == []
    assert all(int(b) == 0 for n, b in model.named_buffers() if n.endswith('num_batches_tracked'))

    def add_arch(module, sd, prefix, local_metadata):
        sd[prefix + 'arch'] = torch.tensor([8])

    def drop_arch(sd, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        assert int(sd.pop(prefix + 'arch')[0]) == 8

    model._register_state_dict_hook(add_arch)
    model._register_load_state_dict_pre_hook(drop_arch)
    optimizer = optim.Adam([{'params': model.features.parameters(), 'lr': 1e-3},
                            {'params': model.classifier.parameters()}], lr=1e-2)
    losses = []
    for _ in range(2):
        losses.append(step(m, model, optimizer, torch.tensor(normal(rng, 2, 1, 6, 6)),
                           torch.tensor(rng.integers(0, 3, 2))))
    checkpoint = {'model': model.state_dict(), 'optimizer': optimizer.state_dict()}
    resumed = Net(in_chans=1, num_classes=3)
    resumed._register_load_state_dict_pre_hook(drop_arch)
    resumed.load_state_dict(checkpoint['model'])
    optimizer = optim.Adam([{'params': resumed.features.parameters(), 'lr': 1e-3},
                            {'params': resumed.classifier.parameters()}], lr=1e-2)
    optimizer.load_state_dict(checkpoint['optimizer'])
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    for st in optimizer.state.values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                st[k] = v.to(device)
    losses.append(step(m, resumed, optimizer, torch.tensor(normal(rng, 2, 1, 6, 6)),
                       torch.tensor(rng.integers(0, 3, 2))))
    return init, losses + summary(resumed.parameters()) + summary(resumed.buffers())


def test_checkpoint_surgery():
    compare(checkpoint_surgery)


# (g) torch 2's autograd.Function form (forward without ctx, setup_context, vmap-able by generate_vmap_rule) as the
# extending-autograd docs write it, beside lukemelas' SwishImplementation in the old form with once_differentiable,
# set_materialize_grads(False) with a gradient that may come as None, and mark_non_differentiable on an argmax output
def function_setup_context(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    once_differentiable = importlib.import_module(m.torch.__name__ + '.autograd.function').once_differentiable
    torch.manual_seed(0)
    rng = np.random.default_rng(8)

    class LinearFunction(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(input, weight, bias):
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def setup_context(ctx, inputs, output):
            input, weight, bias = inputs
            ctx.save_for_backward(input, weight, bias)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    class SwishImplementation(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i * torch.sigmoid(i)
            ctx.save_for_backward(i)
            return result

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_output):
            i = ctx.saved_tensors[0]
            sigmoid_i = torch.sigmoid(i)
            return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))

    class MaxWithIndex(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            values, indices = x.max(dim=1)
            ctx.mark_non_differentiable(indices)
            ctx.save_for_backward(indices)
            ctx.shape = x.shape
            return values, indices

        @staticmethod
        def backward(ctx, grad_values, grad_indices):
            if grad_values is None:
                return None
            indices, = ctx.saved_tensors
            grad = grad_values.new_zeros(ctx.shape)
            grad.scatter_(1, indices.unsqueeze(1), grad_values.unsqueeze(1))
            return grad

    class MyLinear(nn.Module):
        def __init__(self, input_features, output_features, bias=True):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(output_features, input_features))
            if bias:
                self.bias = nn.Parameter(torch.empty(output_features))
            else:
                self.register_parameter('bias', None)
            self.weight.data.uniform_(-0.1, 0.1)
            if self.bias is not None:
                self.bias.data.uniform_(-0.1, 0.1)

        def forward(self, input):
            return LinearFunction.apply(input, self.weight, self.bias)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = MyLinear(12, 10)
            self.fc2 = MyLinear(10, 8, bias=False)
            self.head = nn.Linear(4, 3)

        def forward(self, x):
            x = SwishImplementation.apply(self.fc1(x.flatten(1)))
            pooled, idx = MaxWithIndex.apply(self.fc2(x).view(-1, 2, 4))
            assert not idx.requires_grad
            return self.head(pooled)

    model = Net()
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    losses = [step(m, model, optimizer, torch.tensor(normal(rng, 3, 3, 2, 2)), torch.tensor(rng.integers(0, 3, 3)))
              for _ in range(2)]
    # vmap of the new-form Function over a batch of weights (the functorch tutorials' per-model ensemble)
    weights = torch.tensor(normal(rng, 2, 10, 12))
    x = torch.tensor(normal(rng, 3, 12))
    out = torch.vmap(lambda w: LinearFunction.apply(x, w, None))(weights)
    return init, losses + summary(model.parameters()) + [float(out.sum().item()), float((out ** 2).sum().item())]


def test_function_setup_context():
    compare(function_setup_context)


# (h) xmu-xiaoma666/External-Attention-pytorch's blocks on a small CIFAR trunk: ExternalAttention (two linear
# memory units, softmax over the tokens then an l1 normalisation over the memory), ShuffleAttention (channel
# and spatial halves of each group, a GroupNorm of one channel per group, channel_shuffle by reshape and
# permute), DoubleAttention (A^2-Nets' gather and distribute), the polarized self-attention's channel-only and
# spatial-only branches in parallel, and DANet's position and channel attention (energy_new = max - energy)
def external_attention_zoo(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    init_mod = m.nn.init
    torch.manual_seed(0)
    rng = np.random.default_rng(9)

    class ExternalAttention(nn.Module):
        def __init__(self, d_model, S=64):
            super().__init__()
            self.mk = nn.Linear(d_model, S, bias=False)
            self.mv = nn.Linear(S, d_model, bias=False)
            self.softmax = nn.Softmax(dim=1)
            self.init_weights()

        def init_weights(self):
            for mod in self.modules():
                if isinstance(mod, nn.Linear):
                    init_mod.normal_(mod.weight, std=0.001)
                    if mod.bias is not None:
                        init_mod.constant_(mod.bias, 0)

        def forward(self, queries):
            attn = self.mk(queries)
            attn = self.softmax(attn)
            attn = attn / torch.sum(attn, dim=2, keepdim=True)
            out = self.mv(attn)
            return out

    class ShuffleAttention(nn.Module):
        def __init__(self, channel=512, reduction=16, G=8):
            super().__init__()
            self.G = G
            self.channel = channel
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.gn = nn.GroupNorm(channel // (2 * G), channel // (2 * G))
            self.cweight = nn.Parameter(torch.zeros(1, channel // (2 * G), 1, 1))
            self.cbias = nn.Parameter(torch.ones(1, channel // (2 * G), 1, 1))
            self.sweight = nn.Parameter(torch.zeros(1, channel // (2 * G), 1, 1))
            self.sbias = nn.Parameter(torch.ones(1, channel // (2 * G), 1, 1))
            self.sigmoid = nn.Sigmoid()

        @staticmethod
        def channel_shuffle(x, groups):
            b, c, h, w = x.shape
            x = x.reshape(b, groups, -1, h, w)
            x = x.permute(0, 2, 1, 3, 4)
            x = x.reshape(b, -1, h, w)
            return x

        def forward(self, x):
            b, c, h, w = x.size()
            x = x.view(b * self.G, -1, h, w)
            x_0, x_1 = x.chunk(2, dim=1)
            x_channel = self.avg_pool(x_0)
            x_channel = self.cweight * x_channel + self.cbias
            x_channel = x_0 * self.sigmoid(x_channel)
            x_spatial = self.gn(x_1)
            x_spatial = self.sweight * x_spatial + self.sbias
            x_spatial = x_1 * self.sigmoid(x_spatial)
            out = torch.cat([x_channel, x_spatial], dim=1)
            out = out.contiguous().view(b, -1, h, w)
            out = self.channel_shuffle(out, 2)
            return out

    class DoubleAttention(nn.Module):
        def __init__(self, in_channels, c_m, c_n, reconstruct=True):
            super().__init__()
            self.in_channels = in_channels
            self.reconstruct = reconstruct
            self.c_m = c_m
            self.c_n = c_n
            self.convA = nn.Conv2d(in_channels, c_m, 1)
            self.convB = nn.Conv2d(in_channels, c_n, 1)
            self.convV = nn.Conv2d(in_channels, c_n, 1)
            if self.reconstruct:
                self.conv_reconstruct = nn.Conv2d(c_m, in_channels, kernel_size=1)

        def forward(self, x):
            b, c, h, w = x.shape
            assert c == self.in_channels
            A = self.convA(x)
            B = self.convB(x)
            V = self.convV(x)
            tmpA = A.view(b, self.c_m, -1)
            attention_maps = F.softmax(B.view(b, self.c_n, -1), dim=-1)
            attention_vectors = F.softmax(V.view(b, self.c_n, -1), dim=1)
            global_descriptors = torch.bmm(tmpA, attention_maps.permute(0, 2, 1))
            tmpZ = global_descriptors.matmul(attention_vectors)
            tmpZ = tmpZ.view(b, self.c_m, h, w)
            if self.reconstruct:
                tmpZ = self.conv_reconstruct(tmpZ)
            return tmpZ

    class ParallelPolarizedSelfAttention(nn.Module):
        def __init__(self, channel=512):
            super().__init__()
            self.ch_wv = nn.Conv2d(channel, channel // 2, kernel_size=(1, 1))
            self.ch_wq = nn.Conv2d(channel, 1, kernel_size=(1, 1))
            self.softmax_channel = nn.Softmax(1)
            self.softmax_spatial = nn.Softmax(-1)
            self.ch_wz = nn.Conv2d(channel // 2, channel, kernel_size=(1, 1))
            self.ln = nn.LayerNorm(channel)
            self.sigmoid = nn.Sigmoid()
            self.sp_wv = nn.Conv2d(channel, channel // 2, kernel_size=(1, 1))
            self.sp_wq = nn.Conv2d(channel, channel // 2, kernel_size=(1, 1))
            self.agp = nn.AdaptiveAvgPool2d((1, 1))

        def forward(self, x):
            b, c, h, w = x.size()
            channel_wv = self.ch_wv(x)
            channel_wq = self.ch_wq(x)
            channel_wv = channel_wv.reshape(b, c // 2, -1)
            channel_wq = channel_wq.reshape(b, -1, 1)
            channel_wq = self.softmax_channel(channel_wq)
            channel_wz = torch.matmul(channel_wv, channel_wq).unsqueeze(-1)
            channel_weight = self.sigmoid(self.ln(self.ch_wz(channel_wz).reshape(b, c, 1).permute(0, 2, 1))).permute(
                0, 2, 1).reshape(b, c, 1, 1)
            channel_out = channel_weight * x
            spatial_wv = self.sp_wv(x)
            spatial_wq = self.sp_wq(x)
            spatial_wq = self.agp(spatial_wq)
            spatial_wv = spatial_wv.reshape(b, c // 2, -1)
            spatial_wq = spatial_wq.permute(0, 2, 3, 1).reshape(b, 1, c // 2)
            spatial_wq = self.softmax_spatial(spatial_wq)
            spatial_wz = torch.matmul(spatial_wq, spatial_wv)
            spatial_weight = self.sigmoid(spatial_wz.reshape(b, 1, h, w))
            spatial_out = spatial_weight * x
            out = spatial_out + channel_out
            return out

    class PAM_Module(nn.Module):
        def __init__(self, in_dim):
            super(PAM_Module, self).__init__()
            self.chanel_in = in_dim
            self.query_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim // 2, kernel_size=1)
            self.key_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim // 2, kernel_size=1)
            self.value_conv = nn.Conv2d(in_channels=in_dim, out_channels=in_dim, kernel_size=1)
            self.gamma = nn.Parameter(torch.zeros(1))
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x):
            m_batchsize, C, height, width = x.size()
            proj_query = self.query_conv(x).view(m_batchsize, -1, width * height).permute(0, 2, 1)
            proj_key = self.key_conv(x).view(m_batchsize, -1, width * height)
            energy = torch.bmm(proj_query, proj_key)
            attention = self.softmax(energy)
            proj_value = self.value_conv(x).view(m_batchsize, -1, width * height)
            out = torch.bmm(proj_value, attention.permute(0, 2, 1))
            out = out.view(m_batchsize, C, height, width)
            out = self.gamma * out + x
            return out

    class CAM_Module(nn.Module):
        def __init__(self, in_dim):
            super(CAM_Module, self).__init__()
            self.chanel_in = in_dim
            self.gamma = nn.Parameter(torch.zeros(1))
            self.softmax = nn.Softmax(dim=-1)

        def forward(self, x):
            m_batchsize, C, height, width = x.size()
            proj_query = x.view(m_batchsize, C, -1)
            proj_key = x.view(m_batchsize, C, -1).permute(0, 2, 1)
            energy = torch.bmm(proj_query, proj_key)
            energy_new = torch.max(energy, -1, keepdim=True)[0].expand_as(energy) - energy
            attention = self.softmax(energy_new)
            proj_value = x.view(m_batchsize, C, -1)
            out = torch.bmm(attention, proj_value)
            out = out.view(m_batchsize, C, height, width)
            out = self.gamma * out + x
            return out

    class Net(nn.Module):
        def __init__(self, c=8, classes=5):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
            self.sa = ShuffleAttention(channel=c, G=2)
            self.a2 = DoubleAttention(c, 4, 4)
            self.psa = ParallelPolarizedSelfAttention(channel=c)
            self.pam = PAM_Module(c)
            self.cam = CAM_Module(c)
            self.ea = ExternalAttention(d_model=c, S=6)
            self.fc = nn.Linear(c, classes)

        def forward(self, x):
            x = self.stem(x)
            x = self.sa(x)
            x = x + self.a2(x)
            x = self.psa(x)
            x = self.pam(x) + self.cam(x)
            b, c, h, w = x.shape
            tokens = x.flatten(2).transpose(1, 2)
            tokens = tokens + self.ea(tokens)
            return self.fc(tokens.mean(1))

    model = Net()
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    losses = [step(m, model, optimizer, torch.tensor(normal(rng, 2, 3, 4, 4)), torch.tensor(rng.integers(0, 5, 2)))
              for _ in range(2)]
    return init, losses + summary(model.parameters())


def test_external_attention_zoo():
    compare(external_attention_zoo)


# (i) DingXiaoH's Diverse Branch Block: a kxk conv-BN, a 1x1 conv-BN, a 1x1 then average-pool branch and a
# 1x1-kxk branch whose 1x1 starts as an identity (IdentityBasedConv1x1's id_tensor buffer), trained, then folded
# into one kxk conv by the transI-transVI helpers (BN fusion, the 1x1-kxk merge by a conv of the weights,
# the average pool as a conv weight, zero-padding 1x1 to kxk) and its outputs checked in eval mode
def diverse_branch_block(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(10)

    def transI_fusebn(kernel, bn):
        gamma = bn.weight
        std = (bn.running_var + bn.eps).sqrt()
        return kernel * ((gamma / std).reshape(-1, 1, 1, 1)), bn.bias - bn.running_mean * gamma / std

    def transII_addbranch(kernels, biases):
        return sum(kernels), sum(biases)

    def transIII_1x1_kxk(k1, b1, k2, b2, groups):
        if groups == 1:
            k = F.conv2d(k2, k1.permute(1, 0, 2, 3))
            b_hat = (k2 * b1.reshape(1, -1, 1, 1)).sum((1, 2, 3))
        else:
            raise NotImplementedError
        return k, b_hat + b2

    def transV_avg(channels, kernel_size, groups):
        input_dim = channels // groups
        k = torch.zeros((channels, input_dim, kernel_size, kernel_size))
        k[np.arange(channels), np.tile(np.arange(input_dim), groups), :, :] = 1.0 / kernel_size ** 2
        return k

    def transVI_multiscale(kernel, target_kernel_size):
        H_pixels_to_pad = (target_kernel_size - kernel.size(2)) // 2
        W_pixels_to_pad = (target_kernel_size - kernel.size(3)) // 2
        return F.pad(kernel, [H_pixels_to_pad, H_pixels_to_pad, W_pixels_to_pad, W_pixels_to_pad])

    def conv_bn(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1):
        conv_layer = nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                               stride=stride, padding=padding, dilation=dilation, groups=groups, bias=False)
        bn_layer = nn.BatchNorm2d(num_features=out_channels, affine=True)
        se = nn.Sequential()
        se.add_module('conv', conv_layer)
        se.add_module('bn', bn_layer)
        return se

    class IdentityBasedConv1x1(nn.Conv2d):
        def __init__(self, channels, groups=1):
            super(IdentityBasedConv1x1, self).__init__(in_channels=channels, out_channels=channels, kernel_size=1,
                                                       stride=1, padding=0, groups=groups, bias=False)
            assert channels % groups == 0
            input_dim = channels // groups
            id_value = np.zeros((channels, input_dim, 1, 1))
            for i in range(channels):
                id_value[i, i % input_dim, 0, 0] = 1
            self.id_tensor = torch.from_numpy(id_value).type_as(self.weight)
            nn.init.zeros_(self.weight)

        def forward(self, input):
            kernel = self.weight + self.id_tensor.to(self.weight.device)
            result = F.conv2d(input, kernel, None, stride=1, padding=0, dilation=self.dilation, groups=self.groups)
            return result

        def get_actual_kernel(self):
            return self.weight + self.id_tensor.to(self.weight.device)

    class BNAndPadLayer(nn.Module):
        def __init__(self, pad_pixels, num_features, eps=1e-5, momentum=0.1, affine=True,
                     track_running_stats=True):
            super(BNAndPadLayer, self).__init__()
            self.bn = nn.BatchNorm2d(num_features, eps, momentum, affine, track_running_stats)
            self.pad_pixels = pad_pixels

        def forward(self, input):
            output = self.bn(input)
            if self.pad_pixels > 0:
                if self.bn.affine:
                    pad_values = self.bn.bias.detach() - self.bn.running_mean * self.bn.weight.detach() / torch.sqrt(
                        self.bn.running_var + self.bn.eps)
                else:
                    pad_values = - self.bn.running_mean / torch.sqrt(self.bn.running_var + self.bn.eps)
                output = F.pad(output, [self.pad_pixels] * 4)
                pad_values = pad_values.view(1, -1, 1, 1)
                output[:, :, 0:self.pad_pixels, :] = pad_values
                output[:, :, -self.pad_pixels:, :] = pad_values
                output[:, :, :, 0:self.pad_pixels] = pad_values
                output[:, :, :, -self.pad_pixels:] = pad_values
            return output

        @property
        def weight(self):
            return self.bn.weight

        @property
        def bias(self):
            return self.bn.bias

        @property
        def running_mean(self):
            return self.bn.running_mean

        @property
        def running_var(self):
            return self.bn.running_var

        @property
        def eps(self):
            return self.bn.eps

    class DiverseBranchBlock(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                     internal_channels_1x1_3x3=None, deploy=False, nonlinear=None):
            super(DiverseBranchBlock, self).__init__()
            self.deploy = deploy
            self.nonlinear = nn.Identity() if nonlinear is None else nonlinear
            self.kernel_size = kernel_size
            self.out_channels = out_channels
            self.groups = groups
            assert padding == kernel_size // 2
            if deploy:
                self.dbb_reparam = nn.Conv2d(in_channels=in_channels, out_channels=out_channels,
                                             kernel_size=kernel_size, stride=stride, padding=padding,
                                             dilation=dilation, groups=groups, bias=True)
            else:
                self.dbb_origin = conv_bn(in_channels, out_channels, kernel_size, stride, padding, dilation, groups)
                self.dbb_avg = nn.Sequential()
                self.dbb_avg.add_module('conv', nn.Conv2d(in_channels, out_channels, 1, 1, 0, groups=groups,
                                                          bias=False))
                self.dbb_avg.add_module('bn', BNAndPadLayer(pad_pixels=padding, num_features=out_channels))
                self.dbb_avg.add_module('avg', nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=0))
                self.dbb_1x1 = conv_bn(in_channels, out_channels, 1, stride, 0, groups=groups)
                if internal_channels_1x1_3x3 is None:
                    internal_channels_1x1_3x3 = in_channels
                self.dbb_1x1_kxk = nn.Sequential()
                if internal_channels_1x1_3x3 == in_channels:
                    self.dbb_1x1_kxk.add_module('idconv1', IdentityBasedConv1x1(channels=in_channels, groups=groups))
                else:
                    self.dbb_1x1_kxk.add_module('conv1', nn.Conv2d(in_channels, internal_channels_1x1_3x3, 1,
                                                                   groups=groups, bias=False))
                self.dbb_1x1_kxk.add_module('bn1', BNAndPadLayer(pad_pixels=padding,
                                                                 num_features=internal_channels_1x1_3x3))
                self.dbb_1x1_kxk.add_module('conv2', nn.Conv2d(internal_channels_1x1_3x3, out_channels,
                                                               kernel_size, stride, 0, groups=groups, bias=False))
                self.dbb_1x1_kxk.add_module('bn2', nn.BatchNorm2d(out_channels))

        def get_equivalent_kernel_bias(self):
            k_origin, b_origin = transI_fusebn(self.dbb_origin.conv.weight, self.dbb_origin.bn)
            k_1x1, b_1x1 = transI_fusebn(self.dbb_1x1.conv.weight, self.dbb_1x1.bn)
            k_1x1 = transVI_multiscale(k_1x1, self.kernel_size)
            k_1x1_kxk_first = self.dbb_1x1_kxk.idconv1.get_actual_kernel()
            k_1x1_kxk_first, b_1x1_kxk_first = transI_fusebn(k_1x1_kxk_first, self.dbb_1x1_kxk.bn1)
            k_1x1_kxk_second, b_1x1_kxk_second = transI_fusebn(self.dbb_1x1_kxk.conv2.weight, self.dbb_1x1_kxk.bn2)
            k_1x1_kxk_merged, b_1x1_kxk_merged = transIII_1x1_kxk(k_1x1_kxk_first, b_1x1_kxk_first,
                                                                  k_1x1_kxk_second, b_1x1_kxk_second,
                                                                  groups=self.groups)
            k_avg = transV_avg(self.out_channels, self.kernel_size, self.groups)
            k_1x1_avg_second, b_1x1_avg_second = transI_fusebn(k_avg.to(self.dbb_avg.conv.weight.device),
                                                               self.dbb_avg.bn)
            k_1x1_avg_first = self.dbb_avg.conv.weight
            k_1x1_avg_merged, b_1x1_avg_merged = transIII_1x1_kxk(k_1x1_avg_first, torch.zeros(
                k_1x1_avg_first.size(0)), k_1x1_avg_second, b_1x1_avg_second, groups=self.groups)
            return transII_addbranch((k_origin, k_1x1, k_1x1_kxk_merged, k_1x1_avg_merged),
                                     (b_origin, b_1x1, b_1x1_kxk_merged, b_1x1_avg_merged))

        def switch_to_deploy(self):
            if hasattr(self, 'dbb_reparam'):
                return
            kernel, bias = self.get_equivalent_kernel_bias()
            self.dbb_reparam = nn.Conv2d(in_channels=self.dbb_origin.conv.in_channels,
                                         out_channels=self.dbb_origin.conv.out_channels,
                                         kernel_size=self.dbb_origin.conv.kernel_size,
                                         stride=self.dbb_origin.conv.stride, padding=self.dbb_origin.conv.padding,
                                         dilation=self.dbb_origin.conv.dilation, groups=self.dbb_origin.conv.groups,
                                         bias=True)
            self.dbb_reparam.weight.data = kernel
            self.dbb_reparam.bias.data = bias
            for para in self.parameters():
                para.detach_()
            self.__delattr__('dbb_origin')
            self.__delattr__('dbb_avg')
            if hasattr(self, 'dbb_1x1'):
                self.__delattr__('dbb_1x1')
            self.__delattr__('dbb_1x1_kxk')

        def forward(self, inputs):
            if hasattr(self, 'dbb_reparam'):
                return self.nonlinear(self.dbb_reparam(inputs))
            out = self.dbb_origin(inputs)
            if hasattr(self, 'dbb_1x1'):
                out += self.dbb_1x1(inputs)
            out += self.dbb_avg(inputs)
            out += self.dbb_1x1_kxk(inputs)
            return self.nonlinear(out)

    model = nn.Sequential(DiverseBranchBlock(3, 4, 3, padding=1, nonlinear=nn.ReLU()), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(4, 5))
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = [step(m, model, optimizer, torch.tensor(normal(rng, 2, 3, 5, 5)), torch.tensor(rng.integers(0, 5, 2)))
              for _ in range(2)]
    model.eval()
    x = torch.tensor(normal(rng, 2, 3, 5, 5))
    with torch.no_grad():
        before = model(x)
        model[0].switch_to_deploy()
        after = model(x)
    assert (before - after).abs().max().item() < 1e-4, (before - after).abs().max().item()
    assert [n for n, _ in model.named_children()] == ['0', '1', '2', '3'] and hasattr(model[0], 'dbb_reparam')
    return init, losses + [float(after.sum().item())] + summary(model.parameters())


def test_diverse_branch_block():
    compare(diverse_branch_block)


# (j) the CUDA AMP examples page's loops with GradScaler("cpu") on the host's device type (the autocast off, so both
# libraries compute in fp32): gradient accumulation, clipping the unscaled gradients, two models and two losses
# with two optimizers and one scaler, a step skipped on an injected inf found by the scale dropping (the idiom that
# holds the scheduler back then), the update rule retuned by set_growth_interval, and the scaler's state resumed
def amp_examples(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(11)
    device_type = 'cuda' if torch.cuda.is_available() else 'cpu'
    use_amp = False  # fp32 in both libraries; the scaler runs all the same
    model0 = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    model1 = nn.Sequential(nn.Linear(6, 4))
    init = {'0': load(m, model0, None if state is None else state['0']),
            '1': load(m, model1, None if state is None else state['1'])}
    optimizer0 = optim.SGD(model0.parameters(), lr=0.05, momentum=0.9)
    optimizer1 = optim.Adam(model1.parameters(), lr=0.01)
    scheduler = optim.lr_scheduler.StepLR(optimizer0, step_size=1, gamma=0.5)
    scaler = torch.amp.GradScaler(device_type, init_scale=2.0 ** 10, growth_interval=2)
    iters_to_accumulate = 2
    losses, scales = [], []
    for epoch in range(2):
        for i in range(4):
            input = torch.tensor(normal(rng, 3, 6))
            target = torch.tensor(rng.integers(0, 4, 3))
            with torch.autocast(device_type=device_type, dtype=torch.float16, enabled=use_amp):
                output0 = model0(input)
                output1 = model1(input)
                loss0 = F.cross_entropy(2 * output0 + output1, target)
                loss1 = F.cross_entropy(3 * output0 - output1, target)
                loss0 = loss0 / iters_to_accumulate
                loss1 = loss1 / iters_to_accumulate
            scaler.scale(loss0).backward(retain_graph=True)
            scaler.scale(loss1).backward()
            losses += [loss0.item(), loss1.item()]
            if (i + 1) % iters_to_accumulate == 0:
                if epoch == 0 and i == 3:
                    model1[0].weight.grad[0, 0] = float('inf')
                scaler.unscale_(optimizer0)
                total_norm = torch.nn.utils.clip_grad_norm_(model0.parameters(), max_norm=0.5)
                losses.append(float(total_norm))
                scaler.step(optimizer0)
                scaler.step(optimizer1)
                scale = scaler.get_scale()
                scaler.update()
                skip_lr_sched = (scale > scaler.get_scale())
                scales.append(scaler.get_scale())
                optimizer0.zero_grad()
                optimizer1.zero_grad()
                if not skip_lr_sched:
                    scheduler.step()
        if epoch == 0:
            assert skip_lr_sched and scales == [2.0 ** 10, 2.0 ** 9], scales
            checkpoint = {"scaler": scaler.state_dict(), "optimizer0": optimizer0.state_dict()}
            scaler = torch.amp.GradScaler(device_type)
            scaler.load_state_dict(checkpoint["scaler"])
            assert scaler.get_growth_interval() == 2 and scaler.get_backoff_factor() == 0.5
            scaler.set_growth_interval(1)
    assert scales[2:] == [2.0 ** 10, 2.0 ** 11], scales
    losses += [optimizer0.param_groups[0]['lr']]
    return init, losses + summary(model0.parameters()) + summary(model1.parameters())


def test_amp_examples():
    compare(amp_examples)


# (k) timm's EfficientNet pieces as its TF ports write them: Conv2dSame and MaxPool2dSame (TensorFlow's SAME padding
# by get_same_padding and F.pad, asymmetric where the pad is odd), BatchNorm with TF's eps=1e-3 and momentum=0.01,
# a squeeze-excite with the gate divisor, and rmsprop_tf.py's RMSpropTF (square_avg starting at one, TF's order of
# updates, eps inside the root, lr inside the momentum buffer, decoupled decay) beside torch's own RMSprop
# (centered, with momentum) on a twin
def efficientnet_rmsprop_tf(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Optimizer = optim.Optimizer
    torch.manual_seed(0)
    rng = np.random.default_rng(12)

    def get_same_padding(x, k, s, d):
        return max((math.ceil(x / s) - 1) * s + (k - 1) * d + 1 - x, 0)

    def pad_same(x, k, s, d=(1, 1), value=0):
        ih, iw = x.size()[-2:]
        pad_h, pad_w = get_same_padding(ih, k[0], s[0], d[0]), get_same_padding(iw, k[1], s[1], d[1])
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2], value=value)
        return x

    def conv2d_same(x, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
        x = pad_same(x, weight.shape[-2:], stride, dilation)
        return F.conv2d(x, weight, bias, stride, (0, 0), dilation, groups)

    class Conv2dSame(nn.Conv2d):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                     bias=True):
            super(Conv2dSame, self).__init__(in_channels, out_channels, kernel_size, stride, 0, dilation, groups, bias)

        def forward(self, x):
            return conv2d_same(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    class MaxPool2dSame(nn.MaxPool2d):
        def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
            kernel_size = (kernel_size, kernel_size)
            stride = (stride, stride)
            dilation = (dilation, dilation)
            super(MaxPool2dSame, self).__init__(kernel_size, stride, (0, 0), dilation, ceil_mode)

        def forward(self, x):
            x = pad_same(x, self.kernel_size, self.stride, value=-float('inf'))
            return F.max_pool2d(x, self.kernel_size, self.stride, (0, 0), self.dilation, self.ceil_mode)

    def make_divisible(v, divisor=8, min_value=None, round_limit=.9):
        min_value = min_value or divisor
        new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
        if new_v < round_limit * v:
            new_v += divisor
        return new_v

    class SqueezeExcite(nn.Module):
        def __init__(self, in_chs, rd_ratio=0.25, rd_channels=None, act_layer=nn.ReLU, gate_layer=nn.Sigmoid):
            super(SqueezeExcite, self).__init__()
            if rd_channels is None:
                rd_channels = round(in_chs * rd_ratio)
            self.conv_reduce = nn.Conv2d(in_chs, rd_channels, 1, bias=True)
            self.act1 = act_layer(inplace=True)
            self.conv_expand = nn.Conv2d(rd_channels, in_chs, 1, bias=True)
            self.gate = gate_layer()

        def forward(self, x):
            x_se = x.mean((2, 3), keepdim=True)
            x_se = self.conv_reduce(x_se)
            x_se = self.act1(x_se)
            x_se = self.conv_expand(x_se)
            return x * self.gate(x_se)

    class InvertedResidual(nn.Module):
        def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, exp_ratio=4.0, se_ratio=0.25):
            super().__init__()
            mid_chs = make_divisible(in_chs * exp_ratio, 4)
            self.has_skip = in_chs == out_chs and stride == 1
            self.conv_pw = nn.Conv2d(in_chs, mid_chs, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(mid_chs, eps=1e-3, momentum=0.01)
            self.act1 = nn.SiLU(inplace=True)
            self.conv_dw = Conv2dSame(mid_chs, mid_chs, dw_kernel_size, stride=stride, groups=mid_chs, bias=False)
            self.bn2 = nn.BatchNorm2d(mid_chs, eps=1e-3, momentum=0.01)
            self.act2 = nn.SiLU(inplace=True)
            self.se = SqueezeExcite(mid_chs, rd_channels=max(1, int(in_chs * se_ratio)), act_layer=nn.SiLU)
            self.conv_pwl = nn.Conv2d(mid_chs, out_chs, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(out_chs, eps=1e-3, momentum=0.01)

        def forward(self, x):
            shortcut = x
            x = self.act1(self.bn1(self.conv_pw(x)))
            x = self.act2(self.bn2(self.conv_dw(x)))
            x = self.se(x)
            x = self.bn3(self.conv_pwl(x))
            if self.has_skip:
                x = x + shortcut
            return x

    def efficientnet():
        return nn.Sequential(OrderedDict([
            ('conv_stem', Conv2dSame(3, 4, 3, stride=2, bias=False)),
            ('bn1', nn.BatchNorm2d(4, eps=1e-3, momentum=0.01)), ('act1', nn.SiLU(inplace=True)),
            ('pool', MaxPool2dSame(3, stride=2)),
            ('block0', InvertedResidual(4, 4)), ('block1', InvertedResidual(4, 6, dw_kernel_size=5, stride=2)),
            ('global_pool', nn.AdaptiveAvgPool2d(1)), ('flatten', nn.Flatten()), ('classifier', nn.Linear(6, 5))]))

    class RMSpropTF(Optimizer):
        def __init__(self, params, lr=1e-2, alpha=0.9, eps=1e-10, weight_decay=0, momentum=0., centered=False,
                     decoupled_decay=False, lr_in_momentum=True):
            if not 0.0 <= lr:
                raise ValueError("Invalid learning rate: {}".format(lr))
            defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                            weight_decay=weight_decay, decoupled_decay=decoupled_decay, lr_in_momentum=lr_in_momentum)
            super(RMSpropTF, self).__init__(params, defaults)

        def __setstate__(self, state):
            super(RMSpropTF, self).__setstate__(state)
            for group in self.param_groups:
                group.setdefault('momentum', 0)
                group.setdefault('centered', False)

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    if grad.is_sparse:
                        raise RuntimeError('RMSprop does not support sparse gradients')
                    state = self.state[p]
                    if len(state) == 0:
                        state['step'] = 0
                        state['square_avg'] = torch.ones_like(p)  # PyTorch inits to zero
                        if group['momentum'] > 0:
                            state['momentum_buffer'] = torch.zeros_like(p)
                        if group['centered']:
                            state['grad_avg'] = torch.zeros_like(p)
                    square_avg = state['square_avg']
                    one_minus_alpha = 1. - group['alpha']
                    state['step'] += 1
                    if group['weight_decay'] != 0:
                        if group['decoupled_decay']:
                            p.mul_(1. - group['lr'] * group['weight_decay'])
                        else:
                            grad = grad.add(p, alpha=group['weight_decay'])
                    square_avg.add_(grad.pow(2) - square_avg, alpha=one_minus_alpha)
                    if group['centered']:
                        grad_avg = state['grad_avg']
                        grad_avg.add_(grad - grad_avg, alpha=one_minus_alpha)
                        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).add(group['eps']).sqrt_()
                    else:
                        avg = square_avg.add(group['eps']).sqrt_()
                    if group['momentum'] > 0:
                        buf = state['momentum_buffer']
                        if group['lr_in_momentum']:
                            buf.mul_(group['momentum']).addcdiv_(grad, avg, value=group['lr'])
                            p.add_(-buf)
                        else:
                            buf.mul_(group['momentum']).addcdiv_(grad, avg)
                            p.add_(buf, alpha=-group['lr'])
                    else:
                        p.addcdiv_(grad, avg, value=-group['lr'])
            return loss

    model = efficientnet()
    init = load(m, model, state)
    twin = efficientnet()
    load(m, twin, init)
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.ndim <= 1 or name.endswith('.bias') else decay).append(param)
    optimizer = RMSpropTF([{'params': no_decay, 'weight_decay': 0.}, {'params': decay, 'weight_decay': 1e-5}],
                          lr=1e-3, alpha=0.9, eps=1e-3, momentum=0.9, decoupled_decay=True)
    torch_rmsprop = optim.RMSprop(twin.parameters(), lr=1e-3, alpha=0.9, eps=1e-3, momentum=0.9, centered=True,
                                  weight_decay=1e-5)
    losses = []
    for _ in range(2):
        x = torch.tensor(normal(rng, 2, 3, 11, 11))
        y = torch.tensor(rng.integers(0, 5, 2))
        losses.append(step(m, model, optimizer, x, y))
        losses.append(step(m, twin, torch_rmsprop, x, y))
    return init, losses + summary(model.parameters()) + summary(twin.parameters()) + summary(model.buffers())


def test_efficientnet_rmsprop_tf():
    compare(efficientnet_rmsprop_tf)


# (l) today's module idioms, as torch 2.x code writes them: nn.Buffer (persistent and not) assigned as attributes,
# nn.utils.skip_init then a hand-made init, a model built under torch.device('meta') and materialised by to_empty
# and reset_parameters, load_state_dict(assign=True), get_extra_state/set_extra_state carrying a config through a
# checkpoint, get_parameter/get_buffer by dotted name, and a running-statistics buffer updated in forward
def module_idioms(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(13)

    class Normalize(nn.Module):
        def __init__(self, mean, std):
            super().__init__()
            self.mean = nn.Buffer(torch.tensor(mean).view(1, -1, 1, 1))
            self.std = nn.Buffer(torch.tensor(std).view(1, -1, 1, 1), persistent=False)

        def forward(self, x):
            return (x - self.mean) / self.std

    class RunningScale(nn.Module):
        def __init__(self, dim, momentum=0.1):
            super().__init__()
            self.momentum = momentum
            self.register_buffer('running_rms', torch.ones(dim))
            self.config = {'momentum': momentum, 'dim': dim}

        def forward(self, x):
            if self.training:
                with torch.no_grad():
                    rms = x.pow(2).mean(0).sqrt()
                    self.running_rms.lerp_(rms, self.momentum)
            return x / self.running_rms

        def get_extra_state(self):
            return self.config

        def set_extra_state(self, state):
            self.config = dict(state)
            self.momentum = state['momentum']

    class Net(nn.Module):
        def __init__(self, device=None):
            super().__init__()
            self.norm = Normalize([0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616])
            self.conv = nn.Conv2d(3, 4, 3, padding=1, device=device)
            self.fc1 = nn.Linear(4, 6, device=device)
            self.scale = RunningScale(6)
            self.fc2 = nn.Linear(6, 5, device=device)

        def forward(self, x):
            x = F.relu(self.conv(self.norm(x)))
            x = F.adaptive_avg_pool2d(x, 1).flatten(1)
            return self.fc2(F.gelu(self.scale(self.fc1(x))))

    model = Net()
    head = nn.utils.skip_init(nn.Linear, 5, 3)
    if state is None:
        with torch.no_grad():
            head.weight.copy_(torch.tensor(normal(rng, 3, 5) * 0.2))
            head.bias.zero_()
    else:
        rng.standard_normal((3, 5))
    model.head = head
    # load() with the extra state, a dict, carried as it is
    if state is not None:
        model.load_state_dict({k: v if isinstance(v, dict) else torch.tensor(v) for k, v in state.items()})
    init = {k: dict(v) if isinstance(v, dict) else np.array(v.detach().cpu().numpy())
            for k, v in model.state_dict().items()}
    assert 'norm.std' not in init and 'norm.mean' in init and 'scale._extra_state' in init
    assert sorted(n for n, _ in model.named_buffers()) == ['norm.mean', 'norm.std', 'scale.running_rms']
    optimizer = optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(2):
        x = torch.tensor(rng.random((2, 3, 5, 5)).astype(np.float32))
        y = torch.tensor(rng.integers(0, 3, 2))
        optimizer.zero_grad()
        loss = F.cross_entropy(model.head(model(x)), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.scale.config['momentum'] = 0.5
    model.scale.momentum = 0.5
    checkpoint = model.state_dict()
    with torch.device('meta'):
        fresh = Net()
        fresh.head = nn.Linear(5, 3)
    fresh.to_empty(device='cpu')
    for module in fresh.modules():
        if hasattr(module, 'reset_parameters'):
            module.reset_parameters()
    with torch.no_grad():
        fresh.norm.std.copy_(torch.tensor([0.2470, 0.2435, 0.2616]).view(1, -1, 1, 1))
    fresh.load_state_dict(checkpoint, assign=True)
    assert fresh.scale.momentum == 0.5 and fresh.scale.config == {'momentum': 0.5, 'dim': 6}
    assert fresh.get_parameter('fc1.weight').shape == (6, 4) and fresh.get_buffer('scale.running_rms').shape == (6,)
    optimizer = optim.AdamW(fresh.parameters(), lr=1e-2)
    x = torch.tensor(rng.random((2, 3, 5, 5)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 3, 2))
    optimizer.zero_grad()
    loss = F.cross_entropy(fresh.head(fresh(x)), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    return init, losses + summary(fresh.parameters()) + summary(fresh.buffers())


def test_module_idioms():
    compare(module_idioms)


# (m) three CIFAR blocks of 2021 papers as their repositories write them: BoTNet's MHSA with relative position
# logits (lucidrains' bottleneck-transformer-pytorch: rel_to_abs by padding and flattening, relative logits along
# the width, then the height by permute), MCG-NKU's self-calibrated convolution (SCConv: a downsampled branch
# resized back by F.interpolate(..., identity.size()[2:]) gating by sigmoid) and Vision Permutator's
# WeightedPermuteMLP (height and width mixing by reshape and permute, reweighting by a softmax over three branches)
def botnet_scconv_permutator(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(14)

    def rel_to_abs(x):
        b, h, l, _ = x.shape
        dtype = x.dtype
        col_pad = torch.zeros((b, h, l, 1), dtype=dtype)
        x = torch.cat((x, col_pad), dim=3)
        flat_x = x.reshape(b, h, l * 2 * l)
        flat_pad = torch.zeros((b, h, l - 1), dtype=dtype)
        flat_x_padded = torch.cat((flat_x, flat_pad), dim=2)
        final_x = flat_x_padded.reshape(b, h, l + 1, 2 * l - 1)
        final_x = final_x[:, :, :l, (l - 1):]
        return final_x

    def relative_logits_1d(q, rel_k):
        b, heads, h, w, dim = q.shape
        logits = torch.einsum('bhxyd,rd->bhxyr', q, rel_k)
        logits = logits.reshape(b, heads * h, w, -1)
        logits = rel_to_abs(logits)
        logits = logits.reshape(b, heads, h, w, w)
        logits = logits[:, :, :, None, :, :].expand(b, heads, h, h, w, w)
        return logits

    class RelPosEmb(nn.Module):
        def __init__(self, fmap_size, dim_head):
            super().__init__()
            height, width = fmap_size, fmap_size
            scale = dim_head ** -0.5
            self.fmap_size = fmap_size
            self.rel_height = nn.Parameter(torch.tensor(normal(rng, height * 2 - 1, dim_head)) * scale)
            self.rel_width = nn.Parameter(torch.tensor(normal(rng, width * 2 - 1, dim_head)) * scale)

        def forward(self, q):
            h = w = self.fmap_size
            b, heads = q.shape[0], q.shape[1]
            q = q.reshape(b, heads, h, w, -1)
            rel_logits_w = relative_logits_1d(q, self.rel_width)
            rel_logits_w = rel_logits_w.permute(0, 1, 2, 4, 3, 5).reshape(b, heads, h * w, h * w)
            q = q.permute(0, 1, 3, 2, 4)
            rel_logits_h = relative_logits_1d(q, self.rel_height)
            rel_logits_h = rel_logits_h.permute(0, 1, 4, 2, 5, 3).reshape(b, heads, h * w, h * w)
            return rel_logits_w + rel_logits_h

    class MHSA(nn.Module):
        def __init__(self, dim, fmap_size, heads=2, dim_head=4):
            super().__init__()
            self.heads = heads
            self.scale = dim_head ** -0.5
            inner_dim = heads * dim_head
            self.to_qkv = nn.Conv2d(dim, inner_dim * 3, 1, bias=False)
            self.pos_emb = RelPosEmb(fmap_size, dim_head)

        def forward(self, fmap):
            heads, (b, _, h, w) = self.heads, fmap.shape
            q, k, v = self.to_qkv(fmap).chunk(3, dim=1)
            q, k, v = map(lambda t: t.reshape(b, heads, -1, h * w).transpose(-1, -2), (q, k, v))
            q = q * self.scale
            sim = torch.einsum('bhid,bhjd->bhij', q, k)
            sim = sim + self.pos_emb(q)
            attn = sim.softmax(dim=-1)
            out = torch.einsum('bhij,bhjd->bhid', attn, v)
            out = out.transpose(-1, -2).reshape(b, -1, h, w)
            return out

    class SCConv(nn.Module):
        def __init__(self, inplanes, planes, stride, padding, dilation, groups, pooling_r, norm_layer):
            super(SCConv, self).__init__()
            self.k2 = nn.Sequential(
                nn.AvgPool2d(kernel_size=pooling_r, stride=pooling_r),
                nn.Conv2d(inplanes, planes, kernel_size=3, stride=1, padding=padding, dilation=dilation,
                          groups=groups, bias=False),
                norm_layer(planes))
            self.k3 = nn.Sequential(
                nn.Conv2d(inplanes, planes, kernel_size=3, stride=1, padding=padding, dilation=dilation,
                          groups=groups, bias=False),
                norm_layer(planes))
            self.k4 = nn.Sequential(
                nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=padding, dilation=dilation,
                          groups=groups, bias=False),
                norm_layer(planes))

        def forward(self, x):
            identity = x
            out = torch.sigmoid(torch.add(identity, F.interpolate(self.k2(x), identity.size()[2:])))
            out = torch.mul(self.k3(x), out)
            out = self.k4(out)
            return out

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features)
            self.act = act_layer()
            self.fc2 = nn.Linear(hidden_features, out_features)
            self.drop = nn.Dropout(drop)

        def forward(self, x):
            return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))

    class WeightedPermuteMLP(nn.Module):
        def __init__(self, dim, segment_dim=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0.):
            super().__init__()
            self.segment_dim = segment_dim
            self.mlp_c = nn.Linear(dim, dim, bias=qkv_bias)
            self.mlp_h = nn.Linear(dim, dim, bias=qkv_bias)
            self.mlp_w = nn.Linear(dim, dim, bias=qkv_bias)
            self.reweight = Mlp(dim, dim // 4, dim * 3)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)

        def forward(self, x):
            B, H, W, C = x.shape
            S = C // self.segment_dim
            h = x.reshape(B, H, W, self.segment_dim, S).permute(0, 3, 2, 1, 4).reshape(B, self.segment_dim, W, H * S)
            h = self.mlp_h(h).reshape(B, self.segment_dim, W, H, S).permute(0, 3, 2, 1, 4).reshape(B, H, W, C)
            w = x.reshape(B, H, W, self.segment_dim, S).permute(0, 1, 3, 2, 4).reshape(B, H, self.segment_dim, W * S)
            w = self.mlp_w(w).reshape(B, H, self.segment_dim, W, S).permute(0, 1, 3, 2, 4).reshape(B, H, W, C)
            c = self.mlp_c(x)
            a = (h + w + c).permute(0, 3, 1, 2).flatten(2).mean(2)
            a = self.reweight(a).reshape(B, C, 3).permute(2, 0, 1).softmax(dim=0).unsqueeze(2).unsqueeze(2)
            x = h * a[0] + w * a[1] + c * a[2]
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class Net(nn.Module):
        def __init__(self, classes=5):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8),
                                      nn.ReLU(inplace=True))
            self.scconv = SCConv(8, 8, stride=1, padding=1, dilation=1, groups=2, pooling_r=2,
                                 norm_layer=nn.BatchNorm2d)
            self.mhsa = MHSA(8, fmap_size=4, heads=2, dim_head=4)
            self.norm = nn.LayerNorm(8)
            self.permute = WeightedPermuteMLP(8, segment_dim=4)
            self.head = nn.Linear(8, classes)

        def forward(self, x):
            x = self.stem(x)
            x = F.relu(self.scconv(x)) + x
            x = x + self.mhsa(x)
            x = x.permute(0, 2, 3, 1)
            x = x + self.permute(self.norm(x))
            return self.head(x.mean((1, 2)))

    model = Net()
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-5)
    losses = [step(m, model, optimizer, torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 5, 2)))
              for _ in range(2)]
    return init, losses + summary(model.parameters()) + summary(model.buffers())


def test_botnet_scconv_permutator():
    compare(botnet_scconv_permutator)


# (n) a sequence pipeline of torch.utils.data's less used pieces: two IterableDatasets joined by + (a ChainDataset)
# and two map-style ones by + (a ConcatDataset), a collate_fn padding variable-length MNIST-row sequences by
# pad_sequence with their lengths, pack_padded_sequence(enforce_sorted=False) into a GRU, the outputs unpacked and
# split back by unpad_sequence, and a PairwiseDistance auxiliary loss between the first and last steps
def sequence_pipeline(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    rnn_utils = nn.utils.rnn
    torch.manual_seed(0)
    rng = np.random.default_rng(15)
    rows = [normal(rng, n, 4) for n in (3, 5, 2, 4, 3, 5)]
    labels = [int(v) for v in rng.integers(0, 3, 6)]

    class Rows(data.IterableDataset):
        def __init__(self, start, end):
            super().__init__()
            self.start, self.end = start, end

        def __iter__(self):
            info = data.get_worker_info()
            assert info is None
            for i in range(self.start, self.end):
                yield torch.from_numpy(rows[i]), labels[i]

    class RowsMap(data.Dataset):
        def __init__(self, idx):
            self.idx = idx

        def __len__(self):
            return len(self.idx)

        def __getitem__(self, i):
            j = self.idx[i]
            return torch.from_numpy(rows[j]), labels[j]

    def collate(batch):
        seqs, ys = zip(*batch)
        lengths = torch.tensor([len(s) for s in seqs])
        return rnn_utils.pad_sequence(seqs, batch_first=True), lengths, torch.tensor(ys)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(4, 6, batch_first=True)
            self.fc = nn.Linear(6, 3)
            self.dist = nn.PairwiseDistance(p=2.0)

        def forward(self, x, lengths):
            packed = rnn_utils.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, h = self.gru(packed)
            padded, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first=True)
            assert out_lengths.tolist() == lengths.tolist()
            seqs = rnn_utils.unpad_sequence(padded, out_lengths, batch_first=True)
            aux = self.dist(torch.stack([s[0] for s in seqs]), torch.stack([s[-1] for s in seqs])).mean()
            return self.fc(h[-1]), aux

    chained = Rows(0, 2) + Rows(2, 4)
    concat = RowsMap([4, 5]) + RowsMap([0])
    assert type(chained).__name__ == 'ChainDataset' and type(concat).__name__ == 'ConcatDataset' and len(concat) == 3
    model = Net()
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for loader in (data.DataLoader(chained, batch_size=2, collate_fn=collate),
                   data.DataLoader(concat, batch_size=3, shuffle=False, collate_fn=collate)):
        for x, lengths, y in loader:
            optimizer.zero_grad()
            logits, aux = model(x, lengths)
            loss = F.cross_entropy(logits, y) + 0.1 * aux
            loss.backward()
            nn.utils.clip_grad_value_(model.parameters(), 0.5)
            optimizer.step()
            losses.append(loss.item())
    assert len(losses) == 3
    return init, losses + summary(model.parameters())


def test_sequence_pipeline():
    compare(sequence_pipeline)


# (o) konstmish/prodigy's Prodigy optimizer (D-adaptation's successor): the distance estimate d grown from
# d_numerator (dot products of each gradient with the way from the initial point p0, a strided slice of the
# flattened parameter when slice_p > 1) over d_denom (the l1 norm of the running s), both in float by .item(),
# kept in every param group; bias correction on, decoupled decay, and torch's CosineAnnealingLR over it as the
# README advises
def prodigy(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(16)

    class Prodigy(torch.optim.Optimizer):
        def __init__(self, params, lr=1.0, betas=(0.9, 0.999), beta3=None, eps=1e-8, weight_decay=0,
                     decouple=True, use_bias_correction=False, safeguard_warmup=False, d0=1e-6, d_coef=1.0,
                     growth_rate=float('inf'), fsdp_in_use=False, slice_p=1):
            if not 0.0 < d0:
                raise ValueError("Invalid d0 value: {}".format(d0))
            if not 0.0 < lr:
                raise ValueError("Invalid learning rate: {}".format(lr))
            defaults = dict(lr=lr, betas=betas, beta3=beta3, eps=eps, weight_decay=weight_decay, d=d0, d0=d0,
                            d_max=d0, d_numerator=0.0, d_coef=d_coef, k=0, growth_rate=growth_rate,
                            use_bias_correction=use_bias_correction, decouple=decouple,
                            safeguard_warmup=safeguard_warmup, fsdp_in_use=fsdp_in_use, slice_p=slice_p)
            self.d0 = d0
            super().__init__(params, defaults)

        @property
        def supports_memory_efficient_fp16(self):
            return False

        @property
        def supports_flat_params(self):
            return True

        def step(self, closure=None):
            loss = None
            if closure is not None:
                loss = closure()
            d_denom = 0.0
            group = self.param_groups[0]
            use_bias_correction = group['use_bias_correction']
            beta1, beta2 = group['betas']
            beta3 = group['beta3']
            if beta3 is None:
                beta3 = math.sqrt(beta2)
            k = group['k']
            d = group['d']
            d_max = group['d_max']
            d_coef = group['d_coef']
            lr = max(group['lr'] for group in self.param_groups)
            if use_bias_correction:
                bias_correction = ((1 - beta2 ** (k + 1)) ** 0.5) / (1 - beta1 ** (k + 1))
            else:
                bias_correction = 1
            dlr = d * lr * bias_correction
            growth_rate = group['growth_rate']
            decouple = group['decouple']
            d_numerator = group['d_numerator']
            d_numerator *= beta3
            for group in self.param_groups:
                decay = group['weight_decay']
                k = group['k']
                eps = group['eps']
                group_lr = group['lr']
                d0 = group['d0']
                safeguard_warmup = group['safeguard_warmup']
                slice_p = group['slice_p']
                if group_lr not in [lr, 0.0]:
                    raise RuntimeError("Setting different lr values in different parameter groups is only "
                                       "supported for values of 0")
                for p in group['params']:
                    if p.grad is None:
                        continue
                    grad = p.grad.data
                    if decay != 0 and not decouple:
                        grad.add_(p.data, alpha=decay)
                    state = self.state[p]
                    if 'step' not in state:
                        state['step'] = 0
                        state['s'] = torch.zeros_like(p.data.flatten()[::slice_p]).detach()
                        if p.any():
                            state['p0'] = p.flatten()[::slice_p].detach().clone()
                        else:
                            state['p0'] = torch.tensor(0, device=p.device, dtype=p.dtype)
                        state['exp_avg'] = torch.zeros_like(p.data).detach()
                        state['exp_avg_sq'] = torch.zeros_like(p.data).detach()
                    exp_avg_sq = state['exp_avg_sq']
                    exp_avg = state['exp_avg']
                    s = state['s']
                    p0 = state['p0']
                    if group_lr > 0.0:
                        sliced_grad = grad.flatten()[::slice_p]
                        d_numerator += (d / d0) * dlr * torch.dot(sliced_grad,
                                                                  p0.data - p.data.flatten()[::slice_p]).item()
                        exp_avg.mul_(beta1).add_(grad, alpha=d * (1 - beta1))
                        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=d * d * (1 - beta2))
                        if safeguard_warmup:
                            s.mul_(beta3).add_(sliced_grad, alpha=((d / d0) * d))
                        else:
                            s.mul_(beta3).add_(sliced_grad, alpha=((d / d0) * dlr))
                        d_denom += s.abs().sum().item()
            if d_denom == 0:
                return loss
            if lr > 0.0:
                d_hat = d_coef * d_numerator / d_denom
                if d == group['d0']:
                    d = max(d, d_hat)
                d_max = max(d_max, d_hat)
                d = min(d_max, d * growth_rate)
            for group in self.param_groups:
                group['d_numerator'] = d_numerator
                group['d_denom'] = d_denom
                group['d'] = d
                group['d_max'] = d_max
                group['d_hat'] = d_hat
                decay = group['weight_decay']
                k = group['k']
                eps = group['eps']
                for p in group['params']:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    exp_avg_sq = state['exp_avg_sq']
                    exp_avg = state['exp_avg']
                    state['step'] += 1
                    denom = exp_avg_sq.sqrt().add_(d * eps)
                    if decay != 0 and decouple:
                        p.data.add_(p.data, alpha=-decay * dlr)
                    p.data.addcdiv_(exp_avg, denom, value=-dlr)
                group['k'] = k + 1
            return loss

    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 3 * 3, 10))
    init = load(m, model, state)
    optimizer = Prodigy(model.parameters(), lr=1., weight_decay=0.01, use_bias_correction=True, d0=1e-3,
                        slice_p=2)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
    losses = []
    for _ in range(3):
        losses.append(step(m, model, optimizer, torch.tensor(normal(rng, 3, 1, 6, 6)),
                           torch.tensor(rng.integers(0, 10, 3))))
        scheduler.step()
        group = optimizer.param_groups[0]
        losses += [group['d'] * 1e3, group['d_numerator'] * 1e3, group['lr']]
    return init, losses + summary(model.parameters())


def test_prodigy():
    compare(prodigy)


# (p) eladhoffer's quantized.pytorch as BinaryNet-era repositories copy it: UniformQuantize, an InplaceFunction that
# marks its input dirty when asked to quantise in place, with a straight-through backward; QuantMeasure keeping
# running min and max buffers by mul_/add_ with a momentum; QConv2d and QLinear quantising weights, activations and
# biases on the fly; a checkpoint with the args (an argparse.Namespace) allowed through
# torch.serialization.add_safe_globals, imported by that path, and read back with weights_only=True
def quantized_pytorch(m, state=None, tmp_path=None):
    import argparse
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    InplaceFunction = importlib.import_module(m.torch.__name__ + '.autograd.function').InplaceFunction
    add_safe_globals = importlib.import_module(m.torch.__name__ + '.serialization').add_safe_globals
    torch.manual_seed(0)
    rng = np.random.default_rng(17)

    class UniformQuantize(InplaceFunction):
        @staticmethod
        def forward(ctx, input, num_bits=8, min_value=None, max_value=None, inplace=False):
            ctx.inplace = inplace
            ctx.num_bits = num_bits
            if min_value is None:
                min_value = input.min().item()
            if max_value is None:
                max_value = input.max().item()
            ctx.min_value = min_value
            ctx.max_value = max_value
            if ctx.inplace:
                ctx.mark_dirty(input)
                output = input
            else:
                output = input.clone()
            qmin = 0.
            qmax = 2. ** num_bits - 1.
            scale = max((max_value - min_value) / (qmax - qmin), 1e-8)
            output.add_(-min_value).div_(scale).add_(qmin)
            output.clamp_(qmin, qmax).round_()
            output.add_(-qmin).mul_(scale).add_(min_value)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            grad_input = grad_output
            return grad_input, None, None, None, None

    def quantize(x, num_bits=8, min_value=None, max_value=None, inplace=False):
        return UniformQuantize().apply(x, num_bits, min_value, max_value, inplace)

    class QuantMeasure(nn.Module):
        def __init__(self, num_bits=8, momentum=0.1):
            super(QuantMeasure, self).__init__()
            self.register_buffer('running_min', torch.zeros(1))
            self.register_buffer('running_max', torch.zeros(1))
            self.momentum = momentum
            self.num_bits = num_bits

        def forward(self, input):
            if self.training:
                min_value = input.detach().view(input.size(0), -1).min(-1)[0].mean()
                max_value = input.detach().view(input.size(0), -1).max(-1)[0].mean()
                self.running_min.mul_(self.momentum).add_(min_value * (1 - self.momentum))
                self.running_max.mul_(self.momentum).add_(max_value * (1 - self.momentum))
            else:
                min_value = self.running_min
                max_value = self.running_max
            return quantize(input, self.num_bits, min_value=float(min_value), max_value=float(max_value))

    class QConv2d(nn.Conv2d):
        def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                     bias=True, num_bits=8, num_bits_weight=None):
            super(QConv2d, self).__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                                          bias)
            self.num_bits = num_bits
            self.num_bits_weight = num_bits_weight or num_bits
            self.quantize_input = QuantMeasure(self.num_bits)

        def forward(self, input):
            qinput = self.quantize_input(input)
            qweight = quantize(self.weight, num_bits=self.num_bits_weight, min_value=float(self.weight.min()),
                               max_value=float(self.weight.max()))
            if self.bias is not None:
                qbias = quantize(self.bias, num_bits=self.num_bits_weight)
            else:
                qbias = None
            return F.conv2d(qinput, qweight, qbias, self.stride, self.padding, self.dilation, self.groups)

    class QLinear(nn.Linear):
        def __init__(self, in_features, out_features, bias=True, num_bits=8, num_bits_weight=None):
            super(QLinear, self).__init__(in_features, out_features, bias)
            self.num_bits = num_bits
            self.num_bits_weight = num_bits_weight or num_bits
            self.quantize_input = QuantMeasure(self.num_bits)

        def forward(self, input):
            qinput = self.quantize_input(input)
            qweight = quantize(self.weight, num_bits=self.num_bits_weight, min_value=float(self.weight.min()),
                               max_value=float(self.weight.max()))
            qbias = quantize(self.bias, num_bits=self.num_bits_weight) if self.bias is not None else None
            return F.linear(qinput, qweight, qbias)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = QConv2d(3, 4, 3, padding=1, bias=False, num_bits=8, num_bits_weight=4)
            self.bn1 = nn.BatchNorm2d(4)
            self.fc = QLinear(4 * 2 * 2, 5, num_bits=8, num_bits_weight=4)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            return self.fc(x.flatten(1))

    model = Net()
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = [step(m, model, optimizer, torch.tensor(normal(rng, 3, 3, 4, 4)), torch.tensor(rng.integers(0, 5, 3)))
              for _ in range(2)]
    # a straight-through in-place quantisation of an activation, its gradient passing as it is
    a = torch.tensor(normal(rng, 6), requires_grad=True)
    b = a * 3
    q = quantize(b, num_bits=2, inplace=True)
    assert q is b
    (q * torch.arange(6.)).sum().backward()
    args = argparse.Namespace(bits=8, bits_weight=4, lr=0.05)
    add_safe_globals([argparse.Namespace])
    path = os.path.join(tmp_path, m.torch.__name__ + '_checkpoint.pth.tar')
    torch.save({'state_dict': model.state_dict(), 'args': args, 'epoch': 1}, path)
    checkpoint = torch.load(path, weights_only=True)
    assert checkpoint['args'].bits_weight == 4 and checkpoint['epoch'] == 1
    model.load_state_dict(checkpoint['state_dict'])
    model.eval()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(torch.tensor(normal(rng, 2, 3, 4, 4))), torch.tensor([0, 1])).item())
    return init, (losses + q.tolist() + a.grad.tolist() + summary(model.parameters()) + summary(model.buffers()))


def test_quantized_pytorch(tmp_path):
    compare(quantized_pytorch, tmp_path=tmp_path)


# (q) a custom pre-norm transformer as repositories build it on torch's private helpers (_get_clones and
# _get_activation_fn imported from torch.nn.modules.transformer, an encoder of deep copies, a learned [CLS] token and
# position embedding with trunc_normal_), MultiheadAttention's out_proj class checked by isinstance for its init,
# and a ViT-style patch embedding on CIFAR-sized inputs
def private_transformer_helpers(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    tmod = importlib.import_module(m.torch.__name__ + '.nn.modules.transformer')
    _get_clones, _get_activation_fn = tmod._get_clones, tmod._get_activation_fn
    NonDynamicallyQuantizableLinear = importlib.import_module(
        m.torch.__name__ + '.nn.modules.linear').NonDynamicallyQuantizableLinear
    torch.manual_seed(0)
    rng = np.random.default_rng(18)

    class PreNormEncoderLayer(nn.Module):
        def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu"):
            super().__init__()
            self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=True)
            self.linear1 = nn.Linear(d_model, dim_feedforward)
            self.dropout = nn.Dropout(dropout)
            self.linear2 = nn.Linear(dim_feedforward, d_model)
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)
            self.dropout1 = nn.Dropout(dropout)
            self.dropout2 = nn.Dropout(dropout)
            self.activation = _get_activation_fn(activation)

        def forward(self, src, src_mask=None, src_key_padding_mask=None):
            src2 = self.norm1(src)
            src2 = self.self_attn(src2, src2, src2, attn_mask=src_mask, key_padding_mask=src_key_padding_mask)[0]
            src = src + self.dropout1(src2)
            src2 = self.norm2(src)
            src2 = self.linear2(self.dropout(self.activation(self.linear1(src2))))
            return src + self.dropout2(src2)

    class Encoder(nn.Module):
        def __init__(self, encoder_layer, num_layers, norm=None):
            super().__init__()
            self.layers = _get_clones(encoder_layer, num_layers)
            self.num_layers = num_layers
            self.norm = norm

        def forward(self, src, mask=None, src_key_padding_mask=None):
            output = src
            for layer in self.layers:
                output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)
            if self.norm is not None:
                output = self.norm(output)
            return output

    class ViT(nn.Module):
        def __init__(self, image_size=8, patch_size=4, dim=8, depth=2, heads=2, mlp_dim=16, num_classes=5):
            super().__init__()
            num_patches = (image_size // patch_size) ** 2
            self.patch_embed = nn.Conv2d(3, dim, patch_size, stride=patch_size)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, dim))
            layer = PreNormEncoderLayer(dim, heads, mlp_dim, dropout=0.0, activation="gelu")
            self.encoder = Encoder(layer, depth, norm=nn.LayerNorm(dim))
            self.head = nn.Linear(dim, num_classes)
            nn.init.trunc_normal_(self.pos_embed, std=.02)
            nn.init.trunc_normal_(self.cls_token, std=.02)
            self.apply(self._init_weights)

        def _init_weights(self, mod):
            if isinstance(mod, NonDynamicallyQuantizableLinear):
                nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.Linear):
                nn.init.trunc_normal_(mod.weight, std=.02)
                if mod.bias is not None:
                    nn.init.constant_(mod.bias, 0)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
            x = torch.cat((cls_tokens, x), dim=1) + self.pos_embed
            x = self.encoder(x)
            return self.head(x[:, 0])

    model = ViT()
    assert all(isinstance(layer.self_attn.out_proj, NonDynamicallyQuantizableLinear) for layer in model.encoder.layers)
    assert model.encoder.layers[0].activation is F.gelu
    try:
        _get_activation_fn("tanh")
        raise AssertionError("no error for tanh")
    except RuntimeError as e:
        assert "relu/gelu" in str(e)
    init = load(m, model, state)
    # SGD, not the repositories' AdamW: the keys' bias gets a gradient of rounding alone (softmax ignores it), which
    # Adam would normalise into a step of a different sign in each library
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.05)
    losses = [step(m, model, optimizer, torch.tensor(normal(rng, 2, 3, 8, 8)), torch.tensor(rng.integers(0, 5, 2)))
              for _ in range(2)]
    return init, losses + summary(model.parameters())


def test_private_transformer_helpers():
    compare(private_transformer_helpers)


# (r) memory-saving backward passes written by hand: RobinBruegger's RevTorch reversible blocks (a Function whose
# forward keeps only the output, detached, and whose backward rebuilds each block's inputs from its outputs, calling
# backward() on the block's F and G inside it, so the parameters' gradients accumulate there), and the reentrant
# CheckpointFunction as repositories vendor torch 1.x's (check_backward_validity, get_device_states,
# detach_variable, torch.autograd.backward of the recomputed outputs, the inputs' .grad returned)
def reversible_and_vendored_checkpoint(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    ckpt = importlib.import_module(m.torch.__name__ + '.utils.checkpoint')
    detach_variable, check_backward_validity = ckpt.detach_variable, ckpt.check_backward_validity
    torch.manual_seed(0)
    rng = np.random.default_rng(19)

    class ReversibleBlock(nn.Module):
        def __init__(self, f_block, g_block, split_along_dim=1):
            super(ReversibleBlock, self).__init__()
            self.f_block = f_block
            self.g_block = g_block
            self.split_along_dim = split_along_dim

        def forward(self, x):
            x1, x2 = torch.chunk(x, 2, dim=self.split_along_dim)
            y1, y2 = None, None
            with torch.no_grad():
                y1 = x1 + self.f_block(x2)
                y2 = x2 + self.g_block(y1)
            return torch.cat([y1, y2], dim=self.split_along_dim)

        def backward_pass(self, y, dy, retain_graph):
            y1, y2 = torch.chunk(y, 2, dim=self.split_along_dim)
            del y
            assert (not y1.requires_grad), "y1 must already be detached"
            assert (not y2.requires_grad), "y2 must already be detached"
            dy1, dy2 = torch.chunk(dy, 2, dim=self.split_along_dim)
            del dy
            assert (not dy1.requires_grad), "dy1 must not require grad"
            assert (not dy2.requires_grad), "dy2 must not require grad"
            y1.requires_grad = True
            y2.requires_grad = True
            with torch.enable_grad():
                gy1 = self.g_block(y1)
                gy1.backward(dy2, retain_graph=retain_graph)
            with torch.no_grad():
                x2 = y2 - gy1
                del y2, gy1
                dx1 = dy1 + y1.grad
                del dy1
                y1.grad = None
            with torch.enable_grad():
                x2.requires_grad = True
                fx2 = self.f_block(x2)
                fx2.backward(dx1, retain_graph=retain_graph)
            with torch.no_grad():
                x1 = y1 - fx2
                del y1, fx2
                dx2 = dy2 + x2.grad
                del dy2
                x2.grad = None
                x = torch.cat([x1, x2.detach()], dim=self.split_along_dim)
                dx = torch.cat([dx1, dx2], dim=self.split_along_dim)
            return x, dx

    class _ReversibleModuleFunction(torch.autograd.function.Function):
        @staticmethod
        def forward(ctx, x, reversible_blocks, eagerly_discard_variables):
            assert (isinstance(reversible_blocks, nn.ModuleList))
            for block in reversible_blocks:
                assert (isinstance(block, ReversibleBlock))
                x = block(x)
            ctx.y = x.detach()
            ctx.reversible_blocks = reversible_blocks
            ctx.eagerly_discard_variables = eagerly_discard_variables
            return x

        @staticmethod
        def backward(ctx, dy):
            y = ctx.y
            if ctx.eagerly_discard_variables:
                del ctx.y
            for i in range(len(ctx.reversible_blocks) - 1, -1, -1):
                y, dy = ctx.reversible_blocks[i].backward_pass(y, dy, not ctx.eagerly_discard_variables)
            if ctx.eagerly_discard_variables:
                del ctx.reversible_blocks
            return dy, None, None

    class ReversibleSequence(nn.Module):
        def __init__(self, reversible_blocks, eagerly_discard_variables=True):
            super(ReversibleSequence, self).__init__()
            assert (isinstance(reversible_blocks, nn.ModuleList))
            for block in reversible_blocks:
                assert (isinstance(block, ReversibleBlock))
            self.reversible_blocks = reversible_blocks
            self.eagerly_discard_variables = eagerly_discard_variables

        def forward(self, inp):
            return _ReversibleModuleFunction.apply(inp, self.reversible_blocks, self.eagerly_discard_variables)

    class CheckpointFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, run_function, preserve_rng_state, *args):
            check_backward_validity(args)
            ctx.run_function = run_function
            ctx.preserve_rng_state = preserve_rng_state
            if preserve_rng_state:
                ctx.fwd_cpu_state = torch.get_rng_state()
            ctx.save_for_backward(*args)
            with torch.no_grad():
                outputs = run_function(*args)
            return outputs

        @staticmethod
        def backward(ctx, *args):
            inputs = ctx.saved_tensors
            rng_devices = []
            with torch.random.fork_rng(devices=rng_devices, enabled=ctx.preserve_rng_state):
                if ctx.preserve_rng_state:
                    torch.set_rng_state(ctx.fwd_cpu_state)
                detached_inputs = detach_variable(tuple(inputs))
                with torch.enable_grad():
                    outputs = ctx.run_function(*detached_inputs)
            if isinstance(outputs, torch.Tensor):
                outputs = (outputs,)
            outputs_with_grad = []
            args_with_grad = []
            for i in range(len(outputs)):
                if torch.is_tensor(outputs[i]) and outputs[i].requires_grad:
                    outputs_with_grad.append(outputs[i])
                    args_with_grad.append(args[i])
            if len(outputs_with_grad) == 0:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
            torch.autograd.backward(outputs_with_grad, args_with_grad)
            grads = tuple(inp.grad if isinstance(inp, torch.Tensor) else None for inp in detached_inputs)
            return (None, None) + grads

    def conv_bn_relu(c):
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())

    class RevNet(nn.Module):
        def __init__(self, width=4, classes=5):
            super().__init__()
            self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
            blocks = [ReversibleBlock(conv_bn_relu(width // 2), conv_bn_relu(width // 2)) for _ in range(2)]
            self.rev = ReversibleSequence(nn.ModuleList(blocks))
            self.head_conv = nn.Conv2d(width, width, 1)
            self.fc = nn.Linear(width, classes)

        def forward(self, x):
            x = self.rev(self.stem(x))
            x = CheckpointFunction.apply(lambda t: F.relu(self.head_conv(t)), True, x)
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    model = RevNet()
    # eval-mode batch norm: the reversible recomputation must see the forward's functions exactly
    init = load(m, model, state)
    model.eval()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = [step(m, model, optimizer, torch.tensor(normal(rng, 2, 3, 5, 5)), torch.tensor(rng.integers(0, 5, 2)))
              for _ in range(2)]
    return init, losses + summary(model.parameters())


def test_reversible_and_vendored_checkpoint():
    compare(reversible_and_vendored_checkpoint)


# (s) optimising the input instead of the weights: a DeepDream loop as its PyTorch ports write it (a forward hook
# keeping a layer's activation, jitter by torch.roll and back, octaves by F.interpolate, gradient ascent on
# img.data by the gradient over its mean absolute value, clamping per channel against normalised bounds) and
# SmoothGrad's saliency (gradients of the class score averaged over noisy copies, numpy's noise here)
def deepdream_smoothgrad(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F
    torch.manual_seed(0)
    rng = np.random.default_rng(20)
    mean = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(1, 3, 1, 1)
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    init = load(m, model, state)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    activations = {}

    def hook(module, inp, out):
        activations['target'] = out

    handle = model[2].register_forward_hook(hook)
    lower = torch.tensor((0 - mean) / std)
    upper = torch.tensor((1 - mean) / std)

    def dream(image, iterations=2, lr=0.05):
        image = image.clone().requires_grad_(True)
        for i in range(iterations):
            shift_x, shift_y = [int(v) for v in rng.integers(-2, 3, 2)]
            image.data = torch.roll(image.data, shifts=(shift_x, shift_y), dims=(2, 3))
            model.zero_grad()
            if image.grad is not None:
                image.grad.zero_()
            model(image)
            loss = activations['target'].norm()
            loss.backward()
            avg_grad = np.abs(image.grad.data.cpu().numpy()).mean()
            norm_lr = lr / avg_grad
            image.data += norm_lr * image.grad.data
            image.data = torch.max(torch.min(image.data, upper), lower)
            image.data = torch.roll(image.data, shifts=(-shift_x, -shift_y), dims=(2, 3))
        return image.detach(), loss.item()

    base = torch.tensor(normal(rng, 1, 3, 8, 8) * 0.5)
    octaves = [base]
    for _ in range(1):
        octaves.append(F.interpolate(octaves[-1], scale_factor=0.75, mode='bilinear', align_corners=False))
    detail = torch.zeros_like(octaves[-1])
    losses = []
    for octave, octave_base in enumerate(octaves[::-1]):
        if octave > 0:
            detail = F.interpolate(detail, size=octave_base.shape[-2:], mode='bilinear', align_corners=False)
        dreamed, loss = dream(octave_base + detail)
        losses.append(loss)
        detail = dreamed - octave_base
    handle.remove()
    losses += [float(dreamed.sum().item()), float((dreamed ** 2).sum().item())]

    def smooth_grad(x, target, n=3, sigma=0.15):
        stdev = sigma * (x.max() - x.min()).item()
        total = torch.zeros_like(x)
        for _ in range(n):
            noisy = (x + torch.tensor(normal(rng, *x.shape) * stdev)).requires_grad_(True)
            score = model(noisy)[0, target]
            grad, = torch.autograd.grad(score, noisy)
            total += grad
        return (total / n).abs().amax(dim=1)

    saliency = smooth_grad(base, target=2)
    return init, losses + saliency.flatten().tolist()


def test_deepdream_smoothgrad():
    compare(deepdream_smoothgrad)


# (t) classification losses from detection and noisy-label papers, written as their repositories do: OHEM (the hardest
# samples of a per-sample loss by topk), GHM-C (libra/mmdetection's gradient-density weights: edges, per-bin counts
# by boolean masks, an EMA of the counts kept in a list), Taylor cross-entropy (Feng et al.: a truncated series of
# 1 - p), PolyLoss (Poly-1: CE + epsilon (1 - p_t)) and the symmetric cross-entropy (RCE's log of clamped one-hot)
def loss_zoo(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(21)
    num_classes = 5

    def ohem_loss(cls_pred, cls_target, rate=0.7):
        batch_size = cls_pred.size(0)
        ohem_cls_loss = F.cross_entropy(cls_pred, cls_target, reduction='none', ignore_index=-1)
        sorted_ohem_loss, idx = torch.sort(ohem_cls_loss, descending=True)
        keep_num = min(sorted_ohem_loss.size()[0], int(batch_size * rate))
        if keep_num < sorted_ohem_loss.size()[0]:
            keep_idx_cuda = idx[:keep_num]
            ohem_cls_loss = ohem_cls_loss[keep_idx_cuda]
        cls_loss = ohem_cls_loss.sum() / keep_num
        return cls_loss

    class GHMC(nn.Module):
        def __init__(self, bins=10, momentum=0, use_sigmoid=True, loss_weight=1.0):
            super(GHMC, self).__init__()
            self.bins = bins
            self.momentum = momentum
            edges = torch.arange(bins + 1).float() / bins
            self.register_buffer('edges', edges)
            self.edges[-1] += 1e-6
            if momentum > 0:
                acc_sum = torch.zeros(bins)
                self.register_buffer('acc_sum', acc_sum)
            self.use_sigmoid = use_sigmoid
            self.loss_weight = loss_weight

        def forward(self, pred, target, label_weight, *args, **kwargs):
            if pred.dim() != target.dim():
                target = F.one_hot(target, pred.size(-1)).float()
                label_weight = label_weight.view(-1, 1).expand(-1, pred.size(-1))
            target, label_weight = target.float(), label_weight.float()
            edges = self.edges
            mmt = self.momentum
            weights = torch.zeros_like(pred)
            g = torch.abs(pred.sigmoid().detach() - target)
            valid = label_weight > 0
            tot = max(valid.float().sum().item(), 1.0)
            n = 0
            for i in range(self.bins):
                inds = (g >= edges[i]) & (g < edges[i + 1]) & valid
                num_in_bin = inds.sum().item()
                if num_in_bin > 0:
                    if mmt > 0:
                        self.acc_sum[i] = mmt * self.acc_sum[i] + (1 - mmt) * num_in_bin
                        weights[inds] = tot / self.acc_sum[i]
                    else:
                        weights[inds] = tot / num_in_bin
                    n += 1
            if n > 0:
                weights = weights / n
            loss = F.binary_cross_entropy_with_logits(pred, target, weights, reduction='sum') / tot
            return loss * self.loss_weight

    class TaylorCrossEntropyLoss(nn.Module):
        def __init__(self, n=2, ignore_index=-1, reduction='mean', smoothing=0.0):
            super(TaylorCrossEntropyLoss, self).__init__()
            assert n % 2 == 0
            self.n = n
            self.reduction = reduction
            self.ignore_index = ignore_index

        def taylor_softmax(self, x):
            fn = torch.ones_like(x)
            denor = 1.
            for i in range(1, self.n + 1):
                denor *= i
                fn = fn + x.pow(i) / denor
            out = fn / fn.sum(dim=1, keepdims=True)
            return out

        def forward(self, logits, labels):
            log_probs = self.taylor_softmax(logits).log()
            loss = F.nll_loss(log_probs, labels, reduction=self.reduction, ignore_index=self.ignore_index)
            return loss

    def poly1_cross_entropy(logits, labels, epsilon=1.0):
        pt = torch.sum(F.one_hot(labels, num_classes) * F.softmax(logits, dim=-1), dim=-1)
        CE = F.cross_entropy(logits, labels, reduction='none')
        poly1 = CE + epsilon * (1 - pt)
        return poly1.mean()

    class SCELoss(nn.Module):
        def __init__(self, alpha, beta, num_classes=10):
            super(SCELoss, self).__init__()
            self.alpha = alpha
            self.beta = beta
            self.num_classes = num_classes
            self.cross_entropy = nn.CrossEntropyLoss()

        def forward(self, pred, labels):
            ce = self.cross_entropy(pred, labels)
            pred = F.softmax(pred, dim=1)
            pred = torch.clamp(pred, min=1e-7, max=1.0)
            label_one_hot = F.one_hot(labels, self.num_classes).float()
            label_one_hot = torch.clamp(label_one_hot, min=1e-4, max=1.0)
            rce = (-1 * torch.sum(pred * torch.log(label_one_hot), dim=1))
            loss = self.alpha * ce + self.beta * rce.mean()
            return loss

    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, num_classes))
    init = load(m, model, state)
    ghmc = GHMC(bins=5, momentum=0.5)
    taylor = TaylorCrossEntropyLoss(n=2)
    sce = SCELoss(alpha=0.1, beta=1.0, num_classes=num_classes)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(2):
        x = torch.tensor(normal(rng, 6, 6))
        y = torch.tensor(rng.integers(0, num_classes, 6))
        y_ignored = y.clone()
        y_ignored[0] = -1
        logits = model(x)
        terms = [ohem_loss(logits, y_ignored), ghmc(logits, y, torch.ones(6)), taylor(logits, y_ignored),
                 poly1_cross_entropy(logits, y), sce(logits, y)]
        loss = sum(terms)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [t.item() for t in terms]
    return init, losses + ghmc.acc_sum.tolist() + summary(model.parameters())


def test_loss_zoo():
    compare(loss_zoo)


# (u) Yandex's rtdl FT-Transformer on a tabular batch: a feature tokenizer (numerical features times per-feature
# weights plus biases, categorical embeddings through a category_offsets buffer made by cumsum), a [CLS] token
# appended, pre-norm blocks whose first skips its attention LayerNorm, the head on the last token; and
# Lakshminarayanan's deep ensembles for regression (a softplus variance, the Gaussian NLL, FGSM inputs by the sign of
# the input gradient, the members' mixture mean and variance)
def ft_transformer_deep_ensembles(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(22)

    class Tokenizer(nn.Module):
        def __init__(self, d_numerical, categories, d_token, bias):
            super().__init__()
            if categories is None:
                d_bias = d_numerical
                self.category_offsets = None
                self.category_embeddings = None
            else:
                d_bias = d_numerical + len(categories)
                category_offsets = torch.tensor([0] + categories[:-1]).cumsum(0)
                self.register_buffer('category_offsets', category_offsets)
                self.category_embeddings = nn.Embedding(sum(categories), d_token)
                nn.init.kaiming_uniform_(self.category_embeddings.weight, a=math.sqrt(5))
            self.weight = nn.Parameter(torch.Tensor(d_numerical + 1, d_token))
            self.bias = nn.Parameter(torch.Tensor(d_bias, d_token)) if bias else None
            nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                nn.init.kaiming_uniform_(self.bias, a=math.sqrt(5))

        @property
        def n_tokens(self):
            return len(self.weight) + (0 if self.category_offsets is None else len(self.category_offsets))

        def forward(self, x_num, x_cat):
            x_some = x_num if x_cat is None else x_cat
            assert x_some is not None
            x_num = torch.cat([torch.ones(len(x_some), 1, device=x_some.device)]
                              + ([] if x_num is None else [x_num]), dim=1)
            x = self.weight[None] * x_num[:, :, None]
            if x_cat is not None:
                x = torch.cat([x, self.category_embeddings(x_cat + self.category_offsets[None])], dim=1)
            if self.bias is not None:
                bias = torch.cat([torch.zeros(1, self.bias.shape[1], device=x.device), self.bias])
                x = x + bias[None]
            return x

    class MultiheadAttention(nn.Module):
        def __init__(self, d, n_heads, dropout, initialization='kaiming'):
            super().__init__()
            if n_heads > 1:
                assert d % n_heads == 0
            self.W_q = nn.Linear(d, d)
            self.W_k = nn.Linear(d, d)
            self.W_v = nn.Linear(d, d)
            self.W_out = nn.Linear(d, d) if n_heads > 1 else None
            self.n_heads = n_heads
            self.dropout = nn.Dropout(dropout) if dropout else None
            for mod in [self.W_q, self.W_k, self.W_v]:
                if initialization == 'xavier' and (n_heads > 1 or mod is not self.W_v):
                    nn.init.xavier_uniform_(mod.weight, gain=1 / math.sqrt(2))
                nn.init.zeros_(mod.bias)
            if self.W_out is not None:
                nn.init.zeros_(self.W_out.bias)

        def _reshape(self, x):
            batch_size, n_tokens, d = x.shape
            d_head = d // self.n_heads
            return (x.reshape(batch_size, n_tokens, self.n_heads, d_head).transpose(1, 2)
                    .reshape(batch_size * self.n_heads, n_tokens, d_head))

        def forward(self, x_q, x_kv):
            q, k, v = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)
            for tensor in [q, k, v]:
                assert tensor.shape[-1] % self.n_heads == 0
            batch_size = len(q)
            d_head_key = k.shape[-1] // self.n_heads
            d_head_value = v.shape[-1] // self.n_heads
            n_q_tokens = q.shape[1]
            q = self._reshape(q)
            k = self._reshape(k)
            attention = F.softmax(q @ k.transpose(1, 2) / math.sqrt(d_head_key), dim=-1)
            if self.dropout is not None:
                attention = self.dropout(attention)
            x = attention @ self._reshape(v)
            x = (x.reshape(batch_size, self.n_heads, n_q_tokens, d_head_value).transpose(1, 2)
                 .reshape(batch_size, n_q_tokens, self.n_heads * d_head_value))
            if self.W_out is not None:
                x = self.W_out(x)
            return x

    class Transformer(nn.Module):
        def __init__(self, d_numerical, categories, n_layers, d_token, n_heads, d_ffn_factor, d_out):
            super().__init__()
            self.tokenizer = Tokenizer(d_numerical, categories, d_token, True)
            d_hidden = int(d_token * d_ffn_factor)
            self.layers = nn.ModuleList([])
            for layer_idx in range(n_layers):
                layer = nn.ModuleDict({
                    'attention': MultiheadAttention(d_token, n_heads, 0.0),
                    'linear0': nn.Linear(d_token, d_hidden * 2),
                    'linear1': nn.Linear(d_hidden, d_token),
                    'norm1': nn.LayerNorm(d_token)})
                if layer_idx:
                    layer['norm0'] = nn.LayerNorm(d_token)
                self.layers.append(layer)

            def reglu(x):
                a, b = x.chunk(2, dim=-1)
                return a * F.relu(b)
            self.activation = reglu
            self.last_activation = F.relu
            self.last_normalization = nn.LayerNorm(d_token)
            self.head = nn.Linear(d_token, d_out)

        def _start_residual(self, x, layer, norm_idx):
            x_residual = x
            norm_key = f'norm{norm_idx}'
            if norm_key in layer:
                x_residual = layer[norm_key](x_residual)
            return x_residual

        def forward(self, x_num, x_cat):
            x = self.tokenizer(x_num, x_cat)
            for layer_idx, layer in enumerate(self.layers):
                is_last_layer = layer_idx + 1 == len(self.layers)
                x_residual = self._start_residual(x, layer, 0)
                x_residual = layer['attention'](x_residual[:, :1] if is_last_layer else x_residual, x_residual)
                if is_last_layer:
                    x = x[:, :x_residual.shape[1]]
                x = x + x_residual
                x_residual = self._start_residual(x, layer, 1)
                x_residual = layer['linear0'](x_residual)
                x_residual = self.activation(x_residual)
                x_residual = layer['linear1'](x_residual)
                x = x + x_residual
            assert x.shape[1] == 1
            x = x[:, 0]
            x = self.last_normalization(x)
            x = self.last_activation(x)
            x = self.head(x)
            return x.squeeze(-1)

    class GaussianMLP(nn.Module):
        def __init__(self, inputs=3, hidden=8):
            super().__init__()
            self.fc1 = nn.Linear(inputs, hidden)
            self.fc2 = nn.Linear(hidden, 2)

        def forward(self, x):
            mean, variance = torch.split(self.fc2(F.relu(self.fc1(x))), 1, dim=1)
            variance = F.softplus(variance) + 1e-6
            return mean, variance

    ft = Transformer(d_numerical=3, categories=[3, 4], n_layers=2, d_token=8, n_heads=2, d_ffn_factor=1.0, d_out=1)
    members = nn.ModuleList([GaussianMLP() for _ in range(2)])
    if state is None:
        init = {'ft': load(m, ft, None), 'members': load(m, members, None)}
    else:
        init = {'ft': load(m, ft, state['ft']), 'members': load(m, members, state['members'])}
    decay = [p for n, p in ft.named_parameters() if not ('tokenizer' in n or '.norm' in n or '_normalization' in n
                                                        or n.endswith('.bias'))]
    no_decay = [p for n, p in ft.named_parameters() if 'tokenizer' in n or '.norm' in n or '_normalization' in n
                or n.endswith('.bias')]
    # SGD, not rtdl's AdamW: W_k's bias gets a gradient of rounding alone (softmax ignores it), which Adam would
    # normalise into a step of a different sign in each library
    optimizer = optim.SGD([{'params': decay}, {'params': no_decay, 'weight_decay': 0.0}], lr=0.05, momentum=0.9,
                          weight_decay=1e-5)
    losses = []
    for _ in range(2):
        x_num = torch.tensor(normal(rng, 4, 3))
        x_cat = torch.tensor(np.stack([rng.integers(0, 3, 4), rng.integers(0, 4, 4)], 1))
        y = torch.tensor(normal(rng, 4))
        optimizer.zero_grad()
        loss = F.mse_loss(ft(x_num, x_cat), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    def nll_criterion(mean, variance, target):
        return (torch.log(variance) / 2 + ((target - mean) ** 2) / (2 * variance)).mean()

    ens_optimizers = [optim.Adam(member.parameters(), lr=0.01) for member in members]
    x = torch.tensor(normal(rng, 5, 3))
    y = torch.tensor(normal(rng, 5, 1))
    for member, opt in zip(members, ens_optimizers):
        x_adv = x.clone().requires_grad_(True)
        mean, variance = member(x_adv)
        nll_criterion(mean, variance, y).backward()
        x_adv = (x + 0.01 * torch.sign(x_adv.grad.data)).detach()
        opt.zero_grad()
        mean, variance = member(x)
        loss = nll_criterion(mean, variance, y)
        mean_adv, variance_adv = member(x_adv)
        loss = loss + nll_criterion(mean_adv, variance_adv, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        outs = [member(x) for member in members]
        means = torch.stack([o[0] for o in outs])
        variances = torch.stack([o[1] for o in outs])
        mixture_mean = means.mean(0)
        mixture_var = (variances + means.pow(2)).mean(0) - mixture_mean.pow(2)
    return init, (losses + mixture_mean.flatten().tolist() + mixture_var.flatten().tolist()
                  + summary(ft.parameters()) + summary(members.parameters()))


def test_ft_transformer_deep_ensembles():
    compare(ft_transformer_deep_ensembles)


# (v) torch 1.x's F.multi_head_attention_forward as DETR-family repositories vendor it (Conditional DETR's
# attention.py): the torch.overrides check first, in-projection by slices of one packed weight through F.linear,
# q scaled by head_dim ** -0.5, bias_k/bias_v appended with F.pad on the masks, a key padding mask filled with
# -inf through views, averaged weights returned; wrapped in a module with xavier_uniform_ and constant_ init and a
# nn.Linear out_proj, beside torch's own nn.MultiheadAttention loaded with the same weights
def vendored_mha(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    overrides = importlib.import_module(m.torch.__name__ + '.overrides')
    has_torch_function, handle_torch_function = overrides.has_torch_function, overrides.handle_torch_function
    Tensor = torch.Tensor
    linear, pad, softmax, dropout = F.linear, F.pad, F.softmax, F.dropout
    torch.manual_seed(0)
    rng = np.random.default_rng(23)

    def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                     bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                     training=True, key_padding_mask=None, need_weights=True, attn_mask=None):
        if not torch.jit.is_scripting():
            tens_ops = (query, key, value, in_proj_weight, in_proj_bias, bias_k, bias_v, out_proj_weight,
                        out_proj_bias)
            if any([type(t) is not Tensor for t in tens_ops]) and has_torch_function(tens_ops):
                return handle_torch_function(
                    multi_head_attention_forward, tens_ops, query, key, value, embed_dim_to_check, num_heads,
                    in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
                    out_proj_bias, training=training, key_padding_mask=key_padding_mask, need_weights=need_weights,
                    attn_mask=attn_mask)
        tgt_len, bsz, embed_dim = query.size()
        assert embed_dim == embed_dim_to_check
        assert key.size(0) == value.size(0) and key.size(1) == value.size(1)
        head_dim = embed_dim // num_heads
        assert head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads"
        scaling = float(head_dim) ** -0.5
        _b = in_proj_bias
        _start, _end = 0, embed_dim
        _w = in_proj_weight[_start:_end, :]
        if _b is not None:
            _b = _b[_start:_end]
        q = linear(query, _w, _b)
        _b = in_proj_bias
        _start, _end = embed_dim, None
        _w = in_proj_weight[_start:, :]
        if _b is not None:
            _b = _b[_start:]
        k, v = linear(key, _w, _b).chunk(2, dim=-1)
        q = q * scaling
        if attn_mask is not None:
            if attn_mask.dtype == torch.uint8:
                attn_mask = attn_mask.to(torch.bool)
            if attn_mask.dim() == 2:
                attn_mask = attn_mask.unsqueeze(0)
                if list(attn_mask.size()) != [1, query.size(0), key.size(0)]:
                    raise RuntimeError('The size of the 2D attn_mask is not correct.')
        if bias_k is not None and bias_v is not None:
            k = torch.cat([k, bias_k.repeat(1, bsz, 1)])
            v = torch.cat([v, bias_v.repeat(1, bsz, 1)])
            if attn_mask is not None:
                attn_mask = pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = pad(key_padding_mask, (0, 1))
        q = q.contiguous().view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * num_heads, head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * num_heads, head_dim).transpose(0, 1)
        src_len = k.size(1)
        if add_zero_attn:
            src_len += 1
            k = torch.cat([k, torch.zeros((k.size(0), 1) + k.size()[2:], dtype=k.dtype, device=k.device)], dim=1)
            v = torch.cat([v, torch.zeros((v.size(0), 1) + v.size()[2:], dtype=v.dtype, device=v.device)], dim=1)
            if attn_mask is not None:
                attn_mask = pad(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = pad(key_padding_mask, (0, 1))
        attn_output_weights = torch.bmm(q, k.transpose(1, 2))
        assert list(attn_output_weights.size()) == [bsz * num_heads, tgt_len, src_len]
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                attn_output_weights.masked_fill_(attn_mask, float('-inf'))
            else:
                attn_output_weights += attn_mask
        if key_padding_mask is not None:
            attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
            attn_output_weights = attn_output_weights.masked_fill(
                key_padding_mask.unsqueeze(1).unsqueeze(2), float('-inf'))
            attn_output_weights = attn_output_weights.view(bsz * num_heads, tgt_len, src_len)
        attn_output_weights = softmax(attn_output_weights, dim=-1)
        attn_output_weights = dropout(attn_output_weights, p=dropout_p, training=training)
        attn_output = torch.bmm(attn_output_weights, v)
        assert list(attn_output.size()) == [bsz * num_heads, tgt_len, head_dim]
        attn_output = attn_output.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        if need_weights:
            attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
            return attn_output, attn_output_weights.sum(dim=1) / num_heads
        return attn_output, None

    class MultiheadAttention(nn.Module):
        def __init__(self, embed_dim, num_heads, dropout=0., bias=True, add_bias_kv=False, add_zero_attn=False):
            super(MultiheadAttention, self).__init__()
            self.embed_dim = embed_dim
            self.num_heads = num_heads
            self.dropout = dropout
            self.head_dim = embed_dim // num_heads
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
            if bias:
                self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim))
            else:
                self.register_parameter('in_proj_bias', None)
            self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
            if add_bias_kv:
                self.bias_k = nn.Parameter(torch.empty(1, 1, embed_dim))
                self.bias_v = nn.Parameter(torch.empty(1, 1, embed_dim))
            else:
                self.bias_k = self.bias_v = None
            self.add_zero_attn = add_zero_attn
            self._reset_parameters()

        def _reset_parameters(self):
            nn.init.xavier_uniform_(self.in_proj_weight)
            if self.in_proj_bias is not None:
                nn.init.constant_(self.in_proj_bias, 0.)
                nn.init.constant_(self.out_proj.bias, 0.)
            if self.bias_k is not None:
                nn.init.xavier_normal_(self.bias_k)
            if self.bias_v is not None:
                nn.init.xavier_normal_(self.bias_v)

        def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None):
            return multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
                training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
                attn_mask=attn_mask)

    vendored = MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)
    library = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)
    head = nn.Linear(8, 3)
    init = {'vendored': load(m, vendored, None if state is None else state['vendored']),
            'head': load(m, head, None if state is None else state['head'])}
    library.load_state_dict(vendored.state_dict())
    # SGD: the keys' in-projection bias gets a gradient of rounding alone (softmax ignores it)
    optimizer = optim.SGD(list(vendored.parameters()) + list(head.parameters()), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(2):
        tgt = torch.tensor(normal(rng, 3, 2, 8))
        memory = torch.tensor(normal(rng, 5, 2, 8))
        key_padding_mask = torch.tensor([[False, False, False, True, True], [False] * 5])
        attn_mask = torch.tensor(np.triu(np.ones((3, 5), dtype=bool), k=3))
        out, weights = vendored(tgt, memory, memory, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
        ref, ref_weights = library(tgt, memory, memory, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
        assert (out - ref).abs().max().item() < 1e-5 and (weights - ref_weights).abs().max().item() < 1e-6
        loss = F.cross_entropy(head(out.mean(0)), torch.tensor(rng.integers(0, 3, 2)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        library.load_state_dict(vendored.state_dict())
        losses += [loss.item(), float(weights.sum().item())]
    return init, losses + summary(vendored.parameters()) + summary(head.parameters())


def test_vendored_mha():
    compare(vendored_mha)


# (w) DP-SGD by hand on torch.func, as the per-sample-gradients tutorial and Opacus-free repositories write it: a
# CNN whose batch norms replace_all_batch_norm_modules_ strips of running statistics, per-sample gradients by
# vmap(grad(compute_loss)) over functional_call, each sample's gradient clipped to a norm by a per-sample factor,
# Gaussian noise (numpy's) added to the sum, the result written into p.grad for an SGD step; the batches made by a
# collate function extended through collate_fn_map for a custom sample type
def dp_sgd_by_torch_func(m, state=None):
    torch, nn, F, optim, data = m.torch, m.nn, m.F, m.optim, m.data
    collate_module = importlib.import_module(m.torch.__name__ + '.utils.data._utils.collate')
    torch.manual_seed(0)
    rng = np.random.default_rng(24)

    class Sample:
        def __init__(self, image, label):
            self.image, self.label = image, label

    def collate_sample_fn(batch, *, collate_fn_map=None):
        return (torch.stack([torch.from_numpy(s.image) for s in batch]),
                torch.tensor([s.label for s in batch]))

    collate_fn_map = {Sample: collate_sample_fn}
    collate_fn_map.update(collate_module.default_collate_fn_map)

    def collate_fn(batch):
        return collate_module.collate(batch, collate_fn_map=collate_fn_map)

    class Samples(data.Dataset):
        def __init__(self, n):
            self.items = [Sample(normal(rng, 1, 6, 6), int(rng.integers(0, 4))) for _ in range(n)]

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return {'sample': self.items[i], 'index': i}

    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 3 * 3, 4))
    init = load(m, model, state)
    torch.func.replace_all_batch_norm_modules_(model)
    assert model[1].running_mean is None
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = torch.func.functional_call(model, (params, buffers), (batch,))
        return F.cross_entropy(predictions, targets)

    ft_compute_grad = torch.func.grad(compute_loss)
    ft_compute_sample_grad = torch.vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    optimizer = optim.SGD(model.parameters(), lr=0.5)
    max_grad_norm, noise_multiplier = 1.0, 0.5
    losses = []
    loader = data.DataLoader(Samples(6), batch_size=3, shuffle=False, collate_fn=collate_fn)
    for batch in loader:
        images, labels = batch['sample']
        assert batch['index'].tolist() in ([0, 1, 2], [3, 4, 5])
        params = {k: v.detach() for k, v in model.named_parameters()}
        per_sample_grads = ft_compute_sample_grad(params, buffers, images, labels)
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in per_sample_grads.values()], dim=1).norm(dim=1)
        factors = (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        for name, p in model.named_parameters():
            g = per_sample_grads[name]
            clipped = (g * factors.view(-1, *([1] * (g.dim() - 1)))).sum(0)
            noise = torch.tensor(normal(rng, *p.shape) * noise_multiplier * max_grad_norm)
            p.grad = (clipped + noise) / len(labels)
        optimizer.step()
        with torch.no_grad():
            losses.append(F.cross_entropy(model(images), labels).item())
        losses += norms.tolist()
    return init, losses + summary(model.parameters())


def test_dp_sgd_by_torch_func():
    compare(dp_sgd_by_torch_func)


# (x) an AdamW fork of torch 1.12's adamw.py as repositories carried it into torch 2: `from torch.optim import
# _functional as F` for the step, tensor step counts, a __setstate__ that fills new defaults and turns float steps
# into tensors, and foreach gated on `torch.__version__ >= (1, 12)`; the training loop keeps its best model and
# optimizer as copy.deepcopy snapshots (the fork's own __setstate__ runs), restores them when the loss rises, and
# goes on
def adamw_fork_snapshots(m, state=None):
    torch, nn, F_nn = m.torch, m.nn, m.F
    F = importlib.import_module(m.torch.__name__ + '.optim._functional')
    Optimizer = m.optim.Optimizer
    torch.manual_seed(0)
    rng = np.random.default_rng(25)

    class AdamW(Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                     maximize: bool = False, foreach=None, capturable: bool = False):
            if not 0.0 <= lr:
                raise ValueError("Invalid learning rate: {}".format(lr))
            if not 0.0 <= weight_decay:
                raise ValueError("Invalid weight_decay value: {}".format(weight_decay))
            defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                            foreach=foreach, maximize=maximize, capturable=capturable)
            super(AdamW, self).__init__(params, defaults)

        def __setstate__(self, state):
            super().__setstate__(state)
            for group in self.param_groups:
                group.setdefault('amsgrad', False)
                group.setdefault('maximize', False)
                group.setdefault('foreach', None)
                group.setdefault('capturable', False)
            state_values = list(self.state.values())
            step_is_tensor = (len(state_values) != 0) and torch.is_tensor(state_values[0]['step'])
            if not step_is_tensor:
                for s in state_values:
                    s['step'] = torch.tensor(float(s['step']))

        @torch.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
                amsgrad = group['amsgrad']
                beta1, beta2 = group['betas']
                for p in group['params']:
                    if p.grad is None:
                        continue
                    params_with_grad.append(p)
                    if p.grad.is_sparse:
                        raise RuntimeError('AdamW does not support sparse gradients')
                    grads.append(p.grad)
                    state = self.state[p]
                    if len(state) == 0:
                        state['step'] = torch.tensor(0.)
                        state['exp_avg'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        state['exp_avg_sq'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                        if amsgrad:
                            state['max_exp_avg_sq'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    exp_avgs.append(state['exp_avg'])
                    exp_avg_sqs.append(state['exp_avg_sq'])
                    if amsgrad:
                        max_exp_avg_sqs.append(state['max_exp_avg_sq'])
                    state_steps.append(state['step'])
                F.adamw(params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                        amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=group['lr'],
                        weight_decay=group['weight_decay'], eps=group['eps'], maximize=group['maximize'],
                        foreach=group['foreach'], capturable=group['capturable'])
            return loss

    model = nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
    init = load(m, model, state)
    foreach = True if torch.__version__ >= (1, 12) else None
    optimizer = AdamW(model.parameters(), lr=0.05, weight_decay=0.05, amsgrad=True, foreach=foreach)
    best_loss, best_model, best_optimizer = float('inf'), None, None
    losses, restored = [], 0
    x = torch.tensor(normal(rng, 6, 5))
    y = torch.tensor(rng.integers(0, 3, 6))
    for epoch in range(4):
        optimizer.zero_grad()
        loss = F_nn.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if loss.item() < best_loss:
            best_loss = loss.item()
            best_model = copy.deepcopy(model)
            best_optimizer = copy.deepcopy(optimizer)
        elif best_model is not None:
            model.load_state_dict(best_model.state_dict())
            optimizer.load_state_dict(best_optimizer.state_dict())
            restored += 1
        if epoch == 1:  # a learning-rate change on the live optimizer only
            for group in optimizer.param_groups:
                group['lr'] *= 0.5
    steps = [float(s['step']) for s in optimizer.state.values()]
    assert best_optimizer.param_groups[0]['capturable'] is False and best_model is not model
    return init, losses + [best_loss, float(restored)] + steps + summary(model.parameters())


def test_adamw_fork_snapshots():
    compare(adamw_fork_snapshots)


# (y) pruning at initialisation: SNIP as mi-lad's snip.py writes it (a weight_mask Parameter on each conv and linear
# layer, the weight frozen, forward replaced per instance by types.MethodType, the masks' gradients as connection
# sensitivities, a global threshold from topk, masks applied through prune.custom_from_mask) and SynFlow's
# data-free scores (parameters made positive by abs_ under a saved sign, an all-ones input, |w * grad| scores, the
# signs put back), then one step of training with the pruned weights
def snip_synflow(m, state=None):
    import types
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    prune = importlib.import_module(m.torch.__name__ + '.nn.utils.prune')
    torch.manual_seed(0)
    rng = np.random.default_rng(26)

    def snip_forward_conv2d(self, x):
        return F.conv2d(x, self.weight * self.weight_mask, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def snip_forward_linear(self, x):
        return F.linear(x, self.weight * self.weight_mask, self.bias)

    def SNIP(net, keep_ratio, inputs, targets):
        net = copy.deepcopy(net)
        for layer in net.modules():
            if isinstance(layer, nn.Conv2d) or isinstance(layer, nn.Linear):
                layer.weight_mask = nn.Parameter(torch.ones_like(layer.weight))
                layer.weight.requires_grad = False
            if isinstance(layer, nn.Conv2d):
                layer.forward = types.MethodType(snip_forward_conv2d, layer)
            if isinstance(layer, nn.Linear):
                layer.forward = types.MethodType(snip_forward_linear, layer)
        net.zero_grad()
        outputs = net.forward(inputs)
        loss = F.nll_loss(outputs, targets)
        loss.backward()
        grads_abs = []
        for layer in net.modules():
            if isinstance(layer, nn.Conv2d) or isinstance(layer, nn.Linear):
                grads_abs.append(torch.abs(layer.weight_mask.grad))
        all_scores = torch.cat([torch.flatten(x) for x in grads_abs])
        norm_factor = torch.sum(all_scores)
        all_scores.div_(norm_factor)
        num_params_to_keep = int(len(all_scores) * keep_ratio)
        threshold, _index = torch.topk(all_scores, num_params_to_keep, sorted=True)
        acceptable_score = threshold[-1]
        keep_masks = []
        for g in grads_abs:
            keep_masks.append(((g / norm_factor) >= acceptable_score).float())
        return keep_masks, all_scores

    @torch.no_grad()
    def linearize(model):
        signs = {}
        for name, param in model.state_dict().items():
            signs[name] = torch.sign(param)
            param.abs_()
        return signs

    @torch.no_grad()
    def nonlinearize(model, signs):
        for name, param in model.state_dict().items():
            param.mul_(signs[name])

    def synflow_scores(model, input_dim):
        signs = linearize(model)
        (data, _) = next(iter([(torch.ones([1] + input_dim), None)]))
        model.zero_grad()
        output = model(data)
        torch.sum(output).backward()
        scores = {}
        for name, p in model.named_parameters():
            if name.endswith('weight'):
                scores[name] = torch.clone(p.grad * p).detach().abs_()
                p.grad.data.zero_()
        nonlinearize(model, signs)
        return scores

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.conv2 = nn.Conv2d(4, 6, 3, padding=1)
            self.fc = nn.Linear(6 * 2 * 2, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return F.log_softmax(self.fc(x.flatten(1)), dim=1)

    model = Net()
    init = load(m, model, state)
    x = torch.tensor(normal(rng, 4, 1, 8, 8))
    y = torch.tensor(rng.integers(0, 10, 4))
    keep_masks, all_scores = SNIP(model, 0.5, x, y)
    assert not hasattr(model.conv1, 'weight_mask') and 'forward' not in vars(model.conv1)
    # SynFlow on a copy before the masks go in (torch cannot deep-copy a pruned module: its weight is computed)
    scores = synflow_scores(copy.deepcopy(model), [1, 8, 8])
    layers = [model.conv1, model.conv2, model.fc]
    for layer, mask in zip(layers, keep_masks):
        prune.custom_from_mask(layer, name='weight', mask=mask)
    sparsity = [float(torch.sum(layer.weight == 0)) / layer.weight.nelement() for layer in layers]
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = [step(m, model, optimizer, x, y, loss_fn=F.nll_loss)]
    for layer in layers:
        prune.remove(layer, 'weight')
    return init, (losses + sparsity + [float(all_scores.sum()), float((all_scores ** 2).sum())]
                  + [float(v.sum()) for v in scores.values()] + summary(model.parameters()))


def test_snip_synflow():
    compare(snip_synflow)


# (z) a network grown during training and its optimizer edited by hand, as growing-network and pruning repositories
# do: a residual block appended to an nn.ModuleList mid-run (zero-initialised last layer, so the function is kept),
# its parameters appended to the optimizer's existing group by param_groups[0]['params'].extend(...), then Adam's
# moments reset at a warm restart by `optimizer.state = collections.defaultdict(dict)` and one layer's state dropped
# by `optimizer.state[p] = {}`, each starting afresh at its next step
def grown_network_edited_optimizer(m, state=None):
    import collections
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    torch.manual_seed(0)
    rng = np.random.default_rng(27)

    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc1 = nn.Linear(width, width)
            self.fc2 = nn.Linear(width, width)
            nn.init.zeros_(self.fc2.weight)
            nn.init.zeros_(self.fc2.bias)

        def forward(self, x):
            return x + self.fc2(F.relu(self.fc1(x)))

    class GrowingNet(nn.Module):
        def __init__(self, width=6, classes=4):
            super().__init__()
            self.stem = nn.Linear(5, width)
            self.blocks = nn.ModuleList([Block(width)])
            self.head = nn.Linear(width, classes)

        def grow(self, block):
            self.blocks.append(block)
            return block

        def forward(self, x):
            x = F.relu(self.stem(x))
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    model = GrowingNet()
    extra = Block(6)
    init = {'model': load(m, model, None if state is None else state['model']),
            'extra': load(m, extra, None if state is None else state['extra'])}
    optimizer = optim.Adam(model.parameters(), lr=0.02)
    x = torch.tensor(normal(rng, 8, 5))
    y = torch.tensor(rng.integers(0, 4, 8))
    losses = []
    for epoch in range(5):
        if epoch == 1:
            with torch.no_grad():
                before = model(x)
            model.grow(extra)
            with torch.no_grad():
                assert (model(x) - before).abs().max().item() == 0.0
            optimizer.param_groups[0]['params'].extend(extra.parameters())
        if epoch == 3:  # a warm restart: Adam's moments and step counts from zero
            optimizer.state = collections.defaultdict(dict)
        if epoch == 4:
            optimizer.state[model.head.weight] = {}
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    steps = [float(optimizer.state[p]['step']) for p in (model.stem.weight, extra.fc1.weight, model.head.weight)]
    return init, losses + steps + summary(model.parameters())


def test_grown_network_edited_optimizer():
    compare(grown_network_edited_optimizer)
