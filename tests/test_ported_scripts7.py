"""pytorch/examples and the official tutorials beyond image classification (the spatial transformer,
neural style transfer, fast neural style and super resolution, seq2seq translation with attention, DQN),
PointNet and TCN, written from memory in their repositories' styles and ported by their imports alone,
as test_ported_scripts.py; shapes are tiny and runs 1-3 steps."""

import importlib
import math

import numpy as np

from helpers import batches, compare, load


# (a) the Spatial Transformer Networks tutorial: a localization net regressing theta, F.affine_grid on
# x.size(), F.grid_sample, theta's Linear set to the identity through .data.zero_() and .data.copy_()
def spatial_transformer(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class Net(nn.Module):
        def __init__(self):
            super(Net, self).__init__()
            self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
            self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
            self.conv2_drop = nn.Dropout2d()
            self.fc1 = nn.Linear(320, 50)
            self.fc2 = nn.Linear(50, 10)
            self.localization = nn.Sequential(
                nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
                nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
            self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))
            self.fc_loc[2].weight.data.zero_()
            self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

        def stn(self, x):
            xs = self.localization(x)
            xs = xs.view(-1, 10 * 3 * 3)
            theta = self.fc_loc(xs)
            theta = theta.view(-1, 2, 3)
            grid = F.affine_grid(theta, x.size())
            x = F.grid_sample(x, grid)
            return x

        def forward(self, x):
            x = self.stn(x)
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = x.view(-1, 320)
            x = F.relu(self.fc1(x))
            x = F.dropout(x, training=self.training)
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)

    torch.manual_seed(0)
    model = Net()
    init = load(m, model, state)
    optimizer = optim.SGD(model.parameters(), lr=0.05)
    model.eval()  # the dropouts draw different masks in tnet and torch
    losses = []
    for data, target in batches(3, 2, (2, 1, 28, 28)):
        data, target = torch.tensor(data), torch.tensor(target)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():  # visualize_stn: the transformed batch, as numpy images
        transformed = model.stn(data).cpu()
        grid = transformed.numpy().transpose((0, 2, 3, 1))
        losses += [float(np.abs(grid).sum()), float(model.fc_loc[2].bias.abs().sum())]
    return init, losses


def test_spatial_transformer():
    compare(spatial_transformer)


# (b) the neural style transfer tutorial: a VGG-like features stack copied layer by layer into a new
# nn.Sequential behind a Normalization module, ContentLoss/StyleLoss modules inserted by name, the Gram
# matrix by view and torch.mm, the model cut after its last loss by slicing, the image optimised by
# optim.LBFGS with a closure that clamps it under no_grad, model.requires_grad_(False)
def style_transfer(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class ContentLoss(nn.Module):
        def __init__(self, target,):
            super(ContentLoss, self).__init__()
            self.target = target.detach()

        def forward(self, input):
            self.loss = F.mse_loss(input, self.target)
            return input

    def gram_matrix(input):
        a, b, c, d = input.size()
        features = input.view(a * b, c * d)
        G = torch.mm(features, features.t())
        return G.div(a * b * c * d)

    class StyleLoss(nn.Module):
        def __init__(self, target_feature):
            super(StyleLoss, self).__init__()
            self.target = gram_matrix(target_feature).detach()

        def forward(self, input):
            G = gram_matrix(input)
            self.loss = F.mse_loss(G, self.target)
            return input

    class Normalization(nn.Module):
        def __init__(self, mean, std):
            super(Normalization, self).__init__()
            self.mean = mean.clone().detach().view(-1, 1, 1)
            self.std = torch.tensor(std).view(-1, 1, 1)

        def forward(self, img):
            return (img - self.mean) / self.std

    def get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img,
                                   content_layers=['conv_4'], style_layers=['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5']):
        normalization = Normalization(normalization_mean, normalization_std)
        content_losses, style_losses = [], []
        model = nn.Sequential(normalization)
        i = 0
        for layer in cnn.children():
            if isinstance(layer, nn.Conv2d):
                i += 1
                name = 'conv_{}'.format(i)
            elif isinstance(layer, nn.ReLU):
                name = 'relu_{}'.format(i)
                layer = nn.ReLU(inplace=False)
            elif isinstance(layer, nn.MaxPool2d):
                name = 'pool_{}'.format(i)
            elif isinstance(layer, nn.BatchNorm2d):
                name = 'bn_{}'.format(i)
            else:
                raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.__name__))
            model.add_module(name, layer)
            if name in content_layers:
                target = model(content_img).detach()
                content_loss = ContentLoss(target)
                model.add_module("content_loss_{}".format(i), content_loss)
                content_losses.append(content_loss)
            if name in style_layers:
                target_feature = model(style_img).detach()
                style_loss = StyleLoss(target_feature)
                model.add_module("style_loss_{}".format(i), style_loss)
                style_losses.append(style_loss)
        for i in range(len(model) - 1, -1, -1):
            if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
                break
        model = model[:(i + 1)]
        return model, style_losses, content_losses

    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(4, 4, 3, padding=1),
                        nn.ReLU(inplace=True), nn.MaxPool2d(2, 2), nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(inplace=True),
                        nn.MaxPool2d(2, 2), nn.Conv2d(8, 8, 3, padding=1)).eval()
    init = load(m, cnn, state)
    cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406])
    cnn_normalization_std = [0.229, 0.224, 0.225]
    rng = np.random.default_rng(5)
    style_img = torch.tensor(rng.uniform(0, 1, (1, 3, 12, 12)).astype(np.float32))
    content_img = torch.tensor(rng.uniform(0, 1, (1, 3, 12, 12)).astype(np.float32))
    input_img = content_img.clone()
    model, style_losses, content_losses = get_style_model_and_losses(
        cnn, cnn_normalization_mean, cnn_normalization_std, style_img, content_img, ['conv_2'],
        ['conv_1', 'conv_3'])
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = optim.LBFGS([input_img], max_iter=3)  # the tutorial's 20 (the default): slow in the interpreter
    style_weight, content_weight, num_steps = 1000, 1, 4
    run, scores = [0], []
    while run[0] <= num_steps:
        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0
            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss
            style_score *= style_weight
            content_score *= content_weight
            loss = style_score + content_score
            loss.backward()
            run[0] += 1
            scores.extend([style_score.item(), content_score.item()])
            return style_score + content_score
        optimizer.step(closure)
    input_img.data.clamp_(0, 1)
    names = [name for name, _ in model.named_children()]
    assert names[-1] == 'style_loss_3' and 'content_loss_2' in names, names
    return init, scores + [input_img.sum().item(), float(input_img.grad.abs().sum())]


def test_style_transfer():
    compare(style_transfer)


# (c) pytorch/examples' fast_neural_style: TransformerNet (ReflectionPad2d before each conv,
# InstanceNorm2d(affine=True), residual blocks, UpsampleConvLayer by F.interpolate nearest), a frozen
# VGG whose slices return a namedtuple, utils' gram_matrix by bmm and normalize_batch with batch.div_(255.0)
# in place on the network's output, the checkpoint's InstanceNorm running_* keys deleted by re
def fast_neural_style(m, state=None):
    import re
    from collections import namedtuple
    torch, optim = m.torch, m.optim

    class ConvLayer(torch.nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride):
            super(ConvLayer, self).__init__()
            reflection_padding = kernel_size // 2
            self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
            self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            out = self.reflection_pad(x)
            out = self.conv2d(out)
            return out

    class ResidualBlock(torch.nn.Module):
        def __init__(self, channels):
            super(ResidualBlock, self).__init__()
            self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
            self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
            self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
            self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
            self.relu = torch.nn.ReLU()

        def forward(self, x):
            residual = x
            out = self.relu(self.in1(self.conv1(x)))
            out = self.in2(self.conv2(out))
            out = out + residual
            return out

    class UpsampleConvLayer(torch.nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
            super(UpsampleConvLayer, self).__init__()
            self.upsample = upsample
            reflection_padding = kernel_size // 2
            self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
            self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            x_in = x
            if self.upsample:
                x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
            out = self.reflection_pad(x_in)
            out = self.conv2d(out)
            return out

    class TransformerNet(torch.nn.Module):
        def __init__(self):
            super(TransformerNet, self).__init__()
            self.conv1 = ConvLayer(3, 4, kernel_size=5, stride=1)  # 9 in the script
            self.in1 = torch.nn.InstanceNorm2d(4, affine=True)
            self.conv2 = ConvLayer(4, 8, kernel_size=3, stride=2)
            self.in2 = torch.nn.InstanceNorm2d(8, affine=True)
            self.conv3 = ConvLayer(8, 8, kernel_size=3, stride=2)
            self.in3 = torch.nn.InstanceNorm2d(8, affine=True)
            self.res1 = ResidualBlock(8)
            self.deconv1 = UpsampleConvLayer(8, 8, kernel_size=3, stride=1, upsample=2)
            self.in4 = torch.nn.InstanceNorm2d(8, affine=True)
            self.deconv2 = UpsampleConvLayer(8, 4, kernel_size=3, stride=1, upsample=2)
            self.in5 = torch.nn.InstanceNorm2d(4, affine=True)
            self.deconv3 = ConvLayer(4, 3, kernel_size=5, stride=1)
            self.relu = torch.nn.ReLU()

        def forward(self, X):
            y = self.relu(self.in1(self.conv1(X)))
            y = self.relu(self.in2(self.conv2(y)))
            y = self.relu(self.in3(self.conv3(y)))
            y = self.res1(y)
            y = self.relu(self.in4(self.deconv1(y)))
            y = self.relu(self.in5(self.deconv2(y)))
            y = self.deconv3(y)
            return y

    class Vgg16(torch.nn.Module):
        def __init__(self, requires_grad=False):
            super(Vgg16, self).__init__()
            vgg_pretrained_features = torch.nn.Sequential(
                torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(inplace=True), torch.nn.Conv2d(4, 4, 3, padding=1),
                torch.nn.ReLU(inplace=True), torch.nn.MaxPool2d(2, 2), torch.nn.Conv2d(4, 8, 3, padding=1),
                torch.nn.ReLU(inplace=True))
            self.slice1 = torch.nn.Sequential()
            self.slice2 = torch.nn.Sequential()
            for x in range(4):
                self.slice1.add_module(str(x), vgg_pretrained_features[x])
            for x in range(4, 7):
                self.slice2.add_module(str(x), vgg_pretrained_features[x])
            if not requires_grad:
                for param in self.parameters():
                    param.requires_grad = False

        def forward(self, X):
            h = self.slice1(X)
            h_relu1_2 = h
            h = self.slice2(h)
            h_relu2_2 = h
            vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2'])
            return vgg_outputs(h_relu1_2, h_relu2_2)

    def gram_matrix(y):
        (b, ch, h, w) = y.size()
        features = y.view(b, ch, w * h)
        features_t = features.transpose(1, 2)
        gram = features.bmm(features_t) / (ch * h * w)
        return gram

    def normalize_batch(batch):
        mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        batch = batch.div_(255.0)
        return (batch - mean) / std

    torch.manual_seed(0)
    transformer = TransformerNet()
    vgg = Vgg16(requires_grad=False)
    init = load(m, torch.nn.ModuleDict({"t": transformer, "v": vgg}), state)
    optimizer = optim.Adam(transformer.parameters(), 1e-3)
    mse_loss = torch.nn.MSELoss()
    rng = np.random.default_rng(2)
    batch_size, content_weight, style_weight = 2, 1e5, 1e10
    style = torch.tensor(rng.uniform(0, 255, (1, 3, 8, 8)).astype(np.float32))
    style = style.repeat(batch_size, 1, 1, 1)
    features_style = vgg(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]
    transformer.train()
    agg_content_loss, agg_style_loss, count, losses = 0., 0., 0, []
    for batch_id in range(1):  # one step: the stylized image after it reads the updated weights
        x = torch.tensor(rng.uniform(0, 255, (batch_size, 3, 8, 8)).astype(np.float32))
        n_batch = len(x)
        count += n_batch
        optimizer.zero_grad()
        y = transformer(x)
        y = normalize_batch(y)
        x = normalize_batch(x)
        features_y = vgg(y)
        features_x = vgg(x)
        content_loss = content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)
        style_loss = 0.
        for ft_y, gm_s in zip(features_y, gram_style):
            gm_y = gram_matrix(ft_y)
            style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
        style_loss *= style_weight
        total_loss = content_loss + style_loss
        total_loss.backward()
        optimizer.step()
        agg_content_loss += content_loss.item()
        agg_style_loss += style_loss.item()
        losses += [agg_content_loss / count, agg_style_loss / count]
    # stylize: a checkpoint whose InstanceNorm running stats are dropped, then one image through the model
    state_dict = transformer.state_dict()
    for k in list(state_dict.keys()):
        if re.search(r'in\d+\.running_(mean|var)$', k):
            del state_dict[k]
    style_model = TransformerNet()
    style_model.load_state_dict(state_dict)
    style_model.eval()
    with torch.no_grad():
        content_image = torch.tensor(rng.uniform(0, 255, (3, 8, 8)).astype(np.float32)).unsqueeze(0)
        output = style_model(content_image).cpu()
    img = output[0].clone().clamp(0, 255).numpy()
    img = img.transpose(1, 2, 0).astype("uint8")
    return init, losses + [float(output.abs().mean())]


def test_fast_neural_style():
    compare(fast_neural_style)


# (d) pytorch/examples' super_resolution: nn.PixelShuffle after the last conv, init.orthogonal_ with
# init.calculate_gain('relu'), MSELoss and Adam, the PSNR from 10 * log10(1 / mse.item())
def super_resolution(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    init_ = m.torch.nn.init

    class Net(nn.Module):
        def __init__(self, upscale_factor):
            super(Net, self).__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 8, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(8, 8, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(8, 4, (3, 3), (1, 1), (1, 1))
            self.conv4 = nn.Conv2d(4, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
            self._initialize_weights()

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            x = self.pixel_shuffle(self.conv4(x))
            return x

        def _initialize_weights(self):
            init_.orthogonal_(self.conv1.weight, init_.calculate_gain('relu'))
            init_.orthogonal_(self.conv2.weight, init_.calculate_gain('relu'))
            init_.orthogonal_(self.conv3.weight, init_.calculate_gain('relu'))
            init_.orthogonal_(self.conv4.weight)

    torch.manual_seed(0)
    model = Net(upscale_factor=3)
    init = load(m, model, state)
    w = model.conv2.weight.detach().view(8, -1)
    gram = (w @ w.t()).numpy()  # orthogonal rows of norm gain = sqrt(2)
    assert np.allclose(gram, 2 * np.eye(8), atol=1e-5), gram
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(4)
    epoch_loss, losses = 0, []
    for iteration in range(1, 3):
        input = torch.tensor(rng.uniform(0, 1, (2, 1, 6, 6)).astype(np.float32))
        target = torch.tensor(rng.uniform(0, 1, (2, 1, 18, 18)).astype(np.float32))
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
        losses.append(epoch_loss / iteration)
    avg_psnr = 0
    with torch.no_grad():
        prediction = model(input)
        mse = criterion(prediction, target)
        avg_psnr += 10 * math.log10(1 / mse.item())
    out_img_y = prediction.cpu().detach().numpy()[0]
    out_img_y *= 255.0
    out_img_y = out_img_y.clip(0, 255)
    return init, losses + [avg_psnr, float(out_img_y.mean())]


def test_super_resolution():
    compare(super_resolution)


# (e) the seq2seq translation tutorial: EncoderRNN and AttnDecoderRNN on nn.GRU(batch_first=True),
# Bahdanau attention (Linears Wa/Ua/Va, tanh, squeeze/unsqueeze, softmax, torch.bmm, torch.cat), the
# decoder's input built by torch.empty(...).fill_(SOS_token), teacher forcing by target_tensor[:, i],
# greedy decoding by topk(1) and topi.squeeze(-1).detach(), NLLLoss on log_softmax through view(-1, ...),
# a TensorDataset of LongTensors behind a RandomSampler, evaluation word by word with idx.item()
def seq2seq(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    from_data = importlib.import_module(m.torch.__name__ + ".utils.data")
    TensorDataset, DataLoader, RandomSampler = from_data.TensorDataset, from_data.DataLoader, from_data.RandomSampler
    SOS_token, EOS_token, MAX_LENGTH = 0, 1, 4

    class Lang:
        def __init__(self, name):
            self.name = name
            self.word2index = {}
            self.word2count = {}
            self.index2word = {0: "SOS", 1: "EOS"}
            self.n_words = 2

        def addSentence(self, sentence):
            for word in sentence.split(' '):
                self.addWord(word)

        def addWord(self, word):
            if word not in self.word2index:
                self.word2index[word] = self.n_words
                self.word2count[word] = 1
                self.index2word[self.n_words] = word
                self.n_words += 1
            else:
                self.word2count[word] += 1

    pairs = [["je suis froid", "i am cold"], ["il est grand", "he is tall"], ["je suis grand", "i am tall"]]
    input_lang, output_lang = Lang('fra'), Lang('eng')
    for pair in pairs:
        input_lang.addSentence(pair[0])
        output_lang.addSentence(pair[1])

    def indexesFromSentence(lang, sentence):
        return [lang.word2index[word] for word in sentence.split(' ')]

    def tensorFromSentence(lang, sentence):
        indexes = indexesFromSentence(lang, sentence)
        indexes.append(EOS_token)
        return torch.tensor(indexes, dtype=torch.long).view(1, -1)

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size, dropout_p=0.1):
            super(EncoderRNN, self).__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input):
            embedded = self.dropout(self.embedding(input))
            output, hidden = self.gru(embedded)
            return output, hidden

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super(BahdanauAttention, self).__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = torch.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super(AttnDecoderRNN, self).__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
            decoder_hidden = encoder_hidden
            decoder_outputs = []
            attentions = []
            for i in range(MAX_LENGTH):
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs)
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()  # detach from history as input
            decoder_outputs = torch.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = torch.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.dropout(self.embedding(input))
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = torch.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            output = self.out(output)
            return output, hidden, attn_weights

    def get_dataloader(batch_size):
        n = len(pairs)
        input_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
        target_ids = np.zeros((n, MAX_LENGTH), dtype=np.int32)
        for idx, (inp, tgt) in enumerate(pairs):
            inp_ids = indexesFromSentence(input_lang, inp)
            tgt_ids = indexesFromSentence(output_lang, tgt)
            inp_ids.append(EOS_token)
            tgt_ids.append(EOS_token)
            input_ids[idx, :len(inp_ids)] = inp_ids
            target_ids[idx, :len(tgt_ids)] = tgt_ids
        train_data = TensorDataset(torch.LongTensor(input_ids), torch.LongTensor(target_ids))
        train_sampler = RandomSampler(train_data)  # one batch of all pairs: the mean loss is order-free
        return DataLoader(train_data, sampler=train_sampler, batch_size=batch_size)

    def train_epoch(dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
        total_loss = 0
        for data in dataloader:
            input_tensor, target_tensor = data
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            encoder_outputs, encoder_hidden = encoder(input_tensor)
            decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
            loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
            loss.backward()
            encoder_optimizer.step()
            decoder_optimizer.step()
            total_loss += loss.item()
        return total_loss / len(dataloader)

    def evaluate(encoder, decoder, sentence, input_lang, output_lang):
        with torch.no_grad():
            input_tensor = tensorFromSentence(input_lang, sentence)
            encoder_outputs, encoder_hidden = encoder(input_tensor)
            decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)
            _, topi = decoder_outputs.topk(1)
            decoded_ids = topi.squeeze()
            decoded_words = []
            for idx in decoded_ids:
                if idx.item() == EOS_token:
                    decoded_words.append('<EOS>')
                    break
                decoded_words.append(output_lang.index2word[idx.item()])
        return decoded_words, decoder_attn

    torch.manual_seed(0)
    hidden_size = 8
    encoder = EncoderRNN(input_lang.n_words, hidden_size, dropout_p=0.0)  # dropout draws differ
    decoder = AttnDecoderRNN(hidden_size, output_lang.n_words, dropout_p=0.0)
    init = load(m, nn.ModuleList([encoder, decoder]), state)
    train_dataloader = get_dataloader(batch_size=len(pairs))
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.05)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.05)
    criterion = nn.NLLLoss()
    losses = [train_epoch(train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion)
              for epoch in range(1, 2)]  # the greedy decoding after it reads the updated weights
    encoder.eval()
    decoder.eval()
    output_words, attentions = evaluate(encoder, decoder, pairs[0][0], input_lang, output_lang)
    output_sentence = ' '.join(output_words)
    assert attentions.shape == (1, MAX_LENGTH, 4), attentions.shape
    return init, losses + [float((attentions * attentions).sum()), len(output_sentence)]


def test_seq2seq():
    compare(seq2seq)


# (f) the DQN tutorial: a ReplayMemory of Transition namedtuples in a deque sampled by random.sample,
# Transition(*zip(*transitions)), the non-final mask from torch.tensor(tuple(map(...)), dtype=torch.bool),
# torch.cat of the batch's fields, policy_net(state_batch).gather(1, action_batch), the target net's
# max(1).values written through the mask under no_grad, nn.SmoothL1Loss, AdamW(amsgrad=True),
# clip_grad_value_, the soft update through state_dict() items and load_state_dict, epsilon-greedy
# actions by max(1).indices.view(1, 1), the durations' running mean by unfold; the environment a
# deterministic toy in numpy
def dqn(m, state=None):
    import random
    from collections import deque, namedtuple
    from itertools import count
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    weights = state  # the script's own `state` is the environment's
    Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward'))

    class ReplayMemory(object):
        def __init__(self, capacity):
            self.memory = deque([], maxlen=capacity)

        def push(self, *args):
            self.memory.append(Transition(*args))

        def sample(self, batch_size):
            return random.sample(self.memory, batch_size)

        def __len__(self):
            return len(self.memory)

    class DQN(nn.Module):
        def __init__(self, n_observations, n_actions):
            super(DQN, self).__init__()
            self.layer1 = nn.Linear(n_observations, 16)
            self.layer2 = nn.Linear(16, 16)
            self.layer3 = nn.Linear(16, n_actions)

        def forward(self, x):
            x = F.relu(self.layer1(x))
            x = F.relu(self.layer2(x))
            return self.layer3(x)

    class Env:  # CartPole's interface: reset() -> (state, info), step(a) -> 5-tuple, action_space
        def __init__(self):
            self.rng = np.random.default_rng(8)
            self.action_space = type("Discrete", (), {"n": 2, "sample": lambda _: int(self.rng.integers(2))})()

        def reset(self):
            self.s, self.t = self.rng.uniform(-0.5, 0.5, 4), 0
            return self.s.astype(np.float32), {}

        def step(self, action):
            self.s = 0.9 * self.s + np.array([0.3, -0.2, 0.1, 0.4]) * (2 * action - 1)
            self.t += 1
            return self.s.astype(np.float32), 1.0, bool(abs(self.s[0]) > 0.6), self.t >= 4, {}

    env = Env()
    BATCH_SIZE, GAMMA, EPS_START, EPS_END, EPS_DECAY, TAU, LR = 4, 0.99, 0.5, 0.05, 1000, 0.005, 1e-2  # EPS_START 0.9
    random.seed(0)
    n_actions = env.action_space.n
    state, info = env.reset()
    n_observations = len(state)
    torch.manual_seed(0)
    policy_net = DQN(n_observations, n_actions)
    target_net = DQN(n_observations, n_actions)
    init = load(m, policy_net, weights)
    target_net.load_state_dict(policy_net.state_dict())
    optimizer = optim.AdamW(policy_net.parameters(), lr=LR, amsgrad=True)
    memory = ReplayMemory(10000)
    steps_done, losses, episode_durations = 0, [], []

    def select_action(state):
        nonlocal steps_done
        sample = random.random()
        eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
        steps_done += 1
        if sample > eps_threshold:
            with torch.no_grad():
                return policy_net(state).max(1).indices.view(1, 1)
        else:
            return torch.tensor([[env.action_space.sample()]], dtype=torch.long)

    def optimize_model():
        if len(memory) < BATCH_SIZE:
            return
        transitions = memory.sample(BATCH_SIZE)
        batch = Transition(*zip(*transitions))
        non_final_mask = torch.tensor(tuple(map(lambda s: s is not None, batch.next_state)), dtype=torch.bool)
        non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)
        state_action_values = policy_net(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(BATCH_SIZE)
        with torch.no_grad():
            next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
        expected_state_action_values = (next_state_values * GAMMA) + reward_batch
        criterion = nn.SmoothL1Loss()
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        losses.append(loss.item())

    for i_episode in range(3):
        state, info = env.reset()
        state = torch.tensor(state, dtype=torch.float32).unsqueeze(0)
        for t in count():
            action = select_action(state)
            observation, reward, terminated, truncated, _ = env.step(action.item())
            reward = torch.tensor([reward])
            done = terminated or truncated
            if terminated:
                next_state = None
            else:
                next_state = torch.tensor(observation, dtype=torch.float32).unsqueeze(0)
            memory.push(state, action, next_state, reward)
            state = next_state
            optimize_model()
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
            target_net.load_state_dict(target_net_state_dict)
            if done:
                episode_durations.append(t + 1)
                break
    durations_t = torch.tensor(episode_durations, dtype=torch.float)
    means = durations_t.unfold(0, 2, 1).mean(1).view(-1)
    means = torch.cat((torch.zeros(1), means))
    w = target_net.layer3.weight.detach()
    return init, losses + [float(means.numpy().sum()), float(w.abs().sum()), steps_done]


def test_dqn():
    compare(dqn)


# (g) PointNet (fxia22/pointnet.pytorch): STN3d/STNkd with Conv1d(k, 64, 1) and BatchNorm1d on [N, C, L],
# torch.max(x, 2, keepdim=True)[0], the identity added as Variable(torch.from_numpy(np.array(...)
# .astype(np.float32))).view(1, 9).repeat(batchsize, 1), torch.bmm on transposes, the feature transform
# regulariser torch.norm(bmm(trans, trans.transpose(2, 1)) - I, dim=(1, 2)), the segmentation head's
# transpose(2, 1).contiguous() and log_softmax over view(-1, k); train_classification's loop (StepLR
# stepped first, target[:, 0], pred.data.max(1)[1].eq(target.data).cpu().sum()) on the dataset's
# centred, scaled and rotated point sets. Widths are the script's divided by 64
def pointnet(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    Variable = importlib.import_module(m.torch.__name__ + ".autograd").Variable

    class STN3d(nn.Module):
        def __init__(self):
            super(STN3d, self).__init__()
            self.conv1 = torch.nn.Conv1d(3, 4, 1)
            self.conv2 = torch.nn.Conv1d(4, 4, 1)
            self.conv3 = torch.nn.Conv1d(4, 16, 1)
            self.fc1 = nn.Linear(16, 8)
            self.fc2 = nn.Linear(8, 4)
            self.fc3 = nn.Linear(4, 9)
            self.relu = nn.ReLU()
            self.bn1 = nn.BatchNorm1d(4)
            self.bn2 = nn.BatchNorm1d(4)
            self.bn3 = nn.BatchNorm1d(16)
            self.bn4 = nn.BatchNorm1d(8)
            self.bn5 = nn.BatchNorm1d(4)

        def forward(self, x):
            batchsize = x.size()[0]
            x = F.relu(self.bn1(self.conv1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            x = F.relu(self.bn3(self.conv3(x)))
            x = torch.max(x, 2, keepdim=True)[0]
            x = x.view(-1, 16)
            x = F.relu(self.bn4(self.fc1(x)))
            x = F.relu(self.bn5(self.fc2(x)))
            x = self.fc3(x)
            iden = Variable(torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))).view(1, 9).repeat(batchsize, 1)
            if x.is_cuda:
                iden = iden.cuda()
            x = x + iden
            x = x.view(-1, 3, 3)
            return x

    class STNkd(nn.Module):
        def __init__(self, k=4):
            super(STNkd, self).__init__()
            self.conv1 = torch.nn.Conv1d(k, 4, 1)
            self.conv2 = torch.nn.Conv1d(4, 16, 1)
            self.fc1 = nn.Linear(16, 8)
            self.fc2 = nn.Linear(8, k * k)
            self.relu = nn.ReLU()
            self.bn1 = nn.BatchNorm1d(4)
            self.bn2 = nn.BatchNorm1d(16)
            self.bn3 = nn.BatchNorm1d(8)
            self.k = k

        def forward(self, x):
            batchsize = x.size()[0]
            x = F.relu(self.bn1(self.conv1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            x = torch.max(x, 2, keepdim=True)[0]
            x = x.view(-1, 16)
            x = F.relu(self.bn3(self.fc1(x)))
            x = self.fc2(x)
            iden = Variable(torch.from_numpy(np.eye(self.k).flatten().astype(np.float32))).view(1, self.k * self.k).repeat(batchsize, 1)
            if x.is_cuda:
                iden = iden.cuda()
            x = x + iden
            x = x.view(-1, self.k, self.k)
            return x

    class PointNetfeat(nn.Module):
        def __init__(self, global_feat=True, feature_transform=False):
            super(PointNetfeat, self).__init__()
            self.stn = STN3d()
            self.conv1 = torch.nn.Conv1d(3, 4, 1)
            self.conv2 = torch.nn.Conv1d(4, 16, 1)
            self.bn1 = nn.BatchNorm1d(4)
            self.bn2 = nn.BatchNorm1d(16)
            self.global_feat = global_feat
            self.feature_transform = feature_transform
            if self.feature_transform:
                self.fstn = STNkd(k=4)

        def forward(self, x):
            n_pts = x.size()[2]
            trans = self.stn(x)
            x = x.transpose(2, 1)
            x = torch.bmm(x, trans)
            x = x.transpose(2, 1)
            x = F.relu(self.bn1(self.conv1(x)))
            if self.feature_transform:
                trans_feat = self.fstn(x)
                x = x.transpose(2, 1)
                x = torch.bmm(x, trans_feat)
                x = x.transpose(2, 1)
            else:
                trans_feat = None
            pointfeat = x
            x = self.bn2(self.conv2(x))
            x = torch.max(x, 2, keepdim=True)[0]
            x = x.view(-1, 16)
            if self.global_feat:
                return x, trans, trans_feat
            else:
                x = x.view(-1, 16, 1).repeat(1, 1, n_pts)
                return torch.cat([x, pointfeat], 1), trans, trans_feat

    class PointNetCls(nn.Module):
        def __init__(self, k=2, feature_transform=False):
            super(PointNetCls, self).__init__()
            self.feature_transform = feature_transform
            self.feat = PointNetfeat(global_feat=True, feature_transform=feature_transform)
            self.fc1 = nn.Linear(16, 8)
            self.fc2 = nn.Linear(8, k)
            self.dropout = nn.Dropout(p=0.0)  # p=0.3 in the script: the masks differ
            self.bn1 = nn.BatchNorm1d(8)
            self.relu = nn.ReLU()

        def forward(self, x):
            x, trans, trans_feat = self.feat(x)
            x = F.relu(self.bn1(self.dropout(self.fc1(x))))
            x = self.fc2(x)
            return F.log_softmax(x, dim=1), trans, trans_feat

    class PointNetDenseCls(nn.Module):
        def __init__(self, k=2, feature_transform=False):
            super(PointNetDenseCls, self).__init__()
            self.k = k
            self.feature_transform = feature_transform
            self.feat = PointNetfeat(global_feat=False, feature_transform=feature_transform)
            self.conv1 = torch.nn.Conv1d(20, 8, 1)
            self.conv2 = torch.nn.Conv1d(8, self.k, 1)
            self.bn1 = nn.BatchNorm1d(8)

        def forward(self, x):
            batchsize = x.size()[0]
            n_pts = x.size()[2]
            x, trans, trans_feat = self.feat(x)
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.conv2(x)
            x = x.transpose(2, 1).contiguous()
            x = F.log_softmax(x.view(-1, self.k), dim=-1)
            x = x.view(batchsize, n_pts, self.k)
            return x, trans, trans_feat

    def feature_transform_regularizer(trans):
        d = trans.size()[1]
        I = torch.eye(d)[None, :, :]
        if trans.is_cuda:
            I = I.cuda()
        loss = torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2, 1)) - I, dim=(1, 2)))
        return loss

    rng = np.random.default_rng(6)

    def get_item():  # ShapeNetDataset.__getitem__ on a random cloud
        point_set = rng.standard_normal((12, 3)).astype(np.float32)
        point_set = point_set - np.expand_dims(np.mean(point_set, axis=0), 0)  # center
        dist = np.max(np.sqrt(np.sum(point_set ** 2, axis=1)), 0)
        point_set = point_set / dist  # scale
        theta = rng.uniform(0, np.pi * 2)
        rotation_matrix = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        point_set[:, [0, 2]] = point_set[:, [0, 2]].dot(rotation_matrix)
        point_set = torch.from_numpy(point_set.astype(np.float32))
        cls = torch.from_numpy(np.array([rng.integers(2)]).astype(np.int64))
        return point_set, cls

    torch.manual_seed(0)
    classifier = PointNetCls(k=2, feature_transform=True)
    segmenter = PointNetDenseCls(k=3)
    init = load(m, nn.ModuleList([classifier, segmenter]), state)
    optimizer = optim.Adam(classifier.parameters(), lr=0.001, betas=(0.9, 0.999))
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
    losses = []
    for epoch in range(1):
        scheduler.step()
        items = [get_item() for _ in range(4)]
        points, target = torch.stack([p for p, _ in items]), torch.stack([c for _, c in items])
        target = target[:, 0]
        points = points.transpose(2, 1)
        optimizer.zero_grad()
        classifier = classifier.train()
        pred, trans, trans_feat = classifier(points)
        loss = F.nll_loss(pred, target)
        loss += feature_transform_regularizer(trans_feat) * 0.001
        loss.backward()
        optimizer.step()
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(target.data).cpu().sum()
        losses += [loss.item(), correct.item() / float(4)]
    seg_pred, _, _ = segmenter(points)  # train_segmentation's loss: nll over pred.view(-1, num_classes)
    seg_target = torch.from_numpy(rng.integers(3, size=(4, 12)).astype(np.int64))
    seg_loss = F.nll_loss(seg_pred.view(-1, 3), seg_target.view(-1, 1)[:, 0])
    seg_loss.backward()
    running = classifier.feat.stn.bn3.running_var
    return init, losses + [seg_loss.item(), float(segmenter.feat.stn.fc3.weight.grad.abs().sum()),
                           float(running.sum())]


def test_pointnet():
    compare(pointnet)


# (h) TCN (locuslab/TCN) on sequential MNIST: Conv1d with dilation and padding, Chomp1d's
# x[:, :, :-self.chomp_size].contiguous(), weight_norm from torch.nn.utils (or, as newer copies write it,
# torch.nn.utils.parametrizations), weights drawn by .weight.data.normal_ (the weight_norm's v), a 1x1
# downsample on the residual, the last time step y1[:, :, -1] into a Linear, pmnist_test's loop (the pixel
# permutation by torch.Tensor(np.random.permutation(...)).long(), clip_grad_norm_, train_loss += loss,
# the lr set in param_groups, nll_loss(size_average=False) at test time)
def tcn(m, state=None, parametrize=False):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    if parametrize:
        from_utils = importlib.import_module(m.torch.__name__ + ".nn.utils.parametrizations")
    else:
        from_utils = importlib.import_module(m.torch.__name__ + ".nn.utils")
    weight_norm = from_utils.weight_norm
    Variable = importlib.import_module(m.torch.__name__ + ".autograd").Variable

    class Chomp1d(nn.Module):
        def __init__(self, chomp_size):
            super(Chomp1d, self).__init__()
            self.chomp_size = chomp_size

        def forward(self, x):
            return x[:, :, :-self.chomp_size].contiguous()

    class TemporalBlock(nn.Module):
        def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
            super(TemporalBlock, self).__init__()
            self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size,
                                               stride=stride, padding=padding, dilation=dilation))
            self.chomp1 = Chomp1d(padding)
            self.relu1 = nn.ReLU()
            self.dropout1 = nn.Dropout(dropout)
            self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size,
                                               stride=stride, padding=padding, dilation=dilation))
            self.chomp2 = Chomp1d(padding)
            self.relu2 = nn.ReLU()
            self.dropout2 = nn.Dropout(dropout)
            self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                     self.conv2, self.chomp2, self.relu2, self.dropout2)
            self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
            self.relu = nn.ReLU()
            self.init_weights()

        def init_weights(self):
            # parametrized, the weight is computed at each read: these draws go to a temporary, in torch as in tnet
            self.conv1.weight.data.normal_(0, 0.01)
            self.conv2.weight.data.normal_(0, 0.01)
            if self.downsample is not None:
                self.downsample.weight.data.normal_(0, 0.01)

        def forward(self, x):
            out = self.net(x)
            res = x if self.downsample is None else self.downsample(x)
            return self.relu(out + res)

    class TemporalConvNet(nn.Module):
        def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
            super(TemporalConvNet, self).__init__()
            layers = []
            num_levels = len(num_channels)
            for i in range(num_levels):
                dilation_size = 2 ** i
                in_channels = num_inputs if i == 0 else num_channels[i - 1]
                out_channels = num_channels[i]
                layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size,
                                         padding=(kernel_size - 1) * dilation_size, dropout=dropout)]
            self.network = nn.Sequential(*layers)

        def forward(self, x):
            return self.network(x)

    class TCN(nn.Module):
        def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
            super(TCN, self).__init__()
            self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size, dropout=dropout)
            self.linear = nn.Linear(num_channels[-1], output_size)

        def forward(self, inputs):
            """Inputs have to have dimension (N, C_in, L_in)"""
            y1 = self.tcn(inputs)
            o = self.linear(y1[:, :, -1])
            return F.log_softmax(o, dim=1)

    input_channels, seq_length, n_classes, lr = 1, 36, 10, 2e-3
    np.random.seed(1111)
    permute = torch.Tensor(np.random.permutation(seq_length).astype(np.float64)).long()
    torch.manual_seed(0)
    model = TCN(input_channels, n_classes, [4, 4], kernel_size=3, dropout=0.0)  # dropout 0.05: the masks differ
    init = load(m, model, state)
    optimizer = getattr(optim, 'Adam')(model.parameters(), lr=lr)
    train_loss, losses = 0, []
    model.train()
    for batch_idx, (data, target) in enumerate(batches(9, 2, (2, 1, 6, 6))):
        data, target = torch.tensor(data), torch.tensor(target)
        data = data.view(-1, input_channels, seq_length)
        data = data[:, :, permute]
        data, target = Variable(data), Variable(target)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.2)
        optimizer.step()
        train_loss += loss
        losses.append(train_loss.item() / (batch_idx + 1))
        lr /= 10
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        data, target = (torch.tensor(v) for v in batches(10, 1, (3, 1, 6, 6))[0])
        data = data.view(-1, input_channels, seq_length)[:, :, permute]
        output = model(data)
        test_loss += F.nll_loss(output, target, size_average=False).item()
        pred = output.data.max(1, keepdim=True)[1]
        correct += pred.eq(target.data.view_as(pred)).cpu().sum()
    return init, losses + [test_loss / 3, int(correct)]


def test_tcn():
    compare(tcn)


def test_tcn_parametrized_weight_norm():
    compare(tcn, parametrize=True)


# (e') the seq2seq tutorial's older, one-sentence-at-a-time form: initHidden by torch.zeros(1, 1, H),
# embedded by .view(1, 1, -1), encoder outputs written row by row into a zeros tensor
# (encoder_outputs[ei] = encoder_output[0, 0], with grad), the attention over max_length from
# torch.cat((embedded[0], hidden[0]), 1), bmm of unsqueezed operands, loss += criterion per step, the
# decoder's input from topv, topi = decoder_output.topk(1) and topi.squeeze().detach(), a break on
# decoder_input.item() == EOS_token, loss.item() / target_length
def seq2seq_one_sentence(m, state=None):
    import random
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim
    SOS_token, EOS_token, MAX_LENGTH, teacher_forcing_ratio = 0, 1, 4, 0.5

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size):
            super(EncoderRNN, self).__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size)

        def forward(self, input, hidden):
            embedded = self.embedding(input).view(1, 1, -1)
            output = embedded
            output, hidden = self.gru(output, hidden)
            return output, hidden

        def initHidden(self):
            return torch.zeros(1, 1, self.hidden_size)

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=MAX_LENGTH):
            super(AttnDecoderRNN, self).__init__()
            self.hidden_size = hidden_size
            self.output_size = output_size
            self.dropout_p = dropout_p
            self.max_length = max_length
            self.embedding = nn.Embedding(self.output_size, self.hidden_size)
            self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
            self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
            self.dropout = nn.Dropout(self.dropout_p)
            self.gru = nn.GRU(self.hidden_size, self.hidden_size)
            self.out = nn.Linear(self.hidden_size, self.output_size)

        def forward(self, input, hidden, encoder_outputs):
            embedded = self.embedding(input).view(1, 1, -1)
            embedded = self.dropout(embedded)
            attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
            attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
            output = torch.cat((embedded[0], attn_applied[0]), 1)
            output = self.attn_combine(output).unsqueeze(0)
            output = F.relu(output)
            output, hidden = self.gru(output, hidden)
            output = F.log_softmax(self.out(output[0]), dim=1)
            return output, hidden, attn_weights

    def train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion,
              max_length=MAX_LENGTH):
        encoder_hidden = encoder.initHidden()
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        input_length = input_tensor.size(0)
        target_length = target_tensor.size(0)
        encoder_outputs = torch.zeros(max_length, encoder.hidden_size)
        loss = 0
        for ei in range(input_length):
            encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] = encoder_output[0, 0]
        decoder_input = torch.tensor([[SOS_token]])
        decoder_hidden = encoder_hidden
        use_teacher_forcing = True if random.random() < teacher_forcing_ratio else False
        if use_teacher_forcing:
            for di in range(target_length):
                decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
                loss += criterion(decoder_output, target_tensor[di])
                decoder_input = target_tensor[di]  # Teacher forcing
        else:
            for di in range(target_length):
                decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
                topv, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze().detach()  # detach from history as input
                loss += criterion(decoder_output, target_tensor[di])
                if decoder_input.item() == EOS_token:
                    break
        loss.backward()
        encoder_optimizer.step()
        decoder_optimizer.step()
        return loss.item() / target_length

    torch.manual_seed(0)
    encoder = EncoderRNN(6, 8)
    decoder = AttnDecoderRNN(8, 6, dropout_p=0.0)  # 0.1 in the tutorial: the masks differ
    init = load(m, nn.ModuleList([encoder, decoder]), state)
    encoder_optimizer = optim.SGD(encoder.parameters(), lr=0.5)
    decoder_optimizer = optim.SGD(decoder.parameters(), lr=0.5)
    criterion = nn.NLLLoss()
    random.seed(3)
    pairs = [([2, 3, 4, EOS_token], [2, 5, EOS_token]), ([5, 3, EOS_token], [3, 4, 2, EOS_token])]
    losses = []
    for input_ids, target_ids in pairs:
        input_tensor = torch.tensor(input_ids, dtype=torch.long).view(-1, 1)
        target_tensor = torch.tensor(target_ids, dtype=torch.long).view(-1, 1)
        losses.append(train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer,
                            criterion))
    return init, losses + [float(encoder.embedding.weight.detach().abs().sum())]


def test_seq2seq_one_sentence():
    compare(seq2seq_one_sentence)
