"""pytorch/examples and the official tutorials beyond image classification (the spatial transformer,
neural style transfer, fast neural style and super resolution, seq2seq translation with attention, DQN),
PointNet and TCN, written from memory in their repositories' styles and ported by their imports alone,
as test_ported_scripts.py; shapes are tiny and runs 1-3 steps."""

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
