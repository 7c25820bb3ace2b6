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
