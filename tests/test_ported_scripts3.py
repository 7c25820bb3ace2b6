"""Generative, unsupervised and other classic MNIST/CIFAR programs in the styles people publish (DCGAN,
WGAN, a VAE, autoencoders, a conditional GAN, a capsule network, a char-RNN, Siamese and triplet
networks, a U-Net, a RealNVP coupling layer, a transformer over MNIST rows, a Gaussian mixture),
ported to tnet by their imports alone, as in test_ported_scripts.py. Where a script draws noise,
numpy draws it (or the comparison is left out) so that tnet's and torch's runs see the same numbers;
widths are tiny and runs 1-2 steps."""
import math

import numpy as np

from helpers import batches, compare, imports, load


def noise(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# (a) pytorch/examples' dcgan: weights_init by class name, BCELoss, label.fill_, netD(fake.detach())
def dcgan(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    nz, ngf, ndf, nc = 4, 4, 4, 1

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            nn.init.normal_(m.weight.data, 0.0, 0.02)
        elif classname.find('BatchNorm') != -1:
            nn.init.normal_(m.weight.data, 1.0, 0.02)
            nn.init.constant_(m.bias.data, 0)

    class Generator(nn.Module):
        def __init__(self, ngpu):
            super(Generator, self).__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
                nn.BatchNorm2d(ngf * 2),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
                nn.Tanh()
            )

        def forward(self, input):
            if input.is_cuda and self.ngpu > 1:
                output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
            else:
                output = self.main(input)
            return output

    class Discriminator(nn.Module):
        def __init__(self, ngpu):
            super(Discriminator, self).__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
                nn.Sigmoid()
            )

        def forward(self, input):
            output = self.main(input)
            return output.view(-1, 1).squeeze(1)

    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    netG = Generator(1).to(device)
    netG.apply(weights_init)
    netD = Discriminator(1).to(device)
    netD.apply(weights_init)
    init = load(m, nn.ModuleList([netG, netD]), state)
    criterion = nn.BCELoss()
    fixed_noise = torch.tensor(noise(0, 2, nz, 1, 1)).to(device)
    real_label, fake_label = 1, 0
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    losses = []
    for i, (data, _) in enumerate(batches(1, 2, (2, 1, 16, 16))):
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = torch.tensor(data).to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        z = torch.tensor(noise(10 + i, batch_size, nz, 1, 1)).to(device)
        fake = netG(z)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        print('[%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
              % (i, 2, errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
        losses += [errD.item(), errG.item(), D_x, D_G_z1, D_G_z2]
    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    assert tuple(fake.shape) == (2, 1, 16, 16)
    losses.append(fake.abs().sum().item())
    return init, losses


def test_dcgan():
    compare(dcgan)


# (b) WGAN: RMSprop, critic weight clipping with p.data.clamp_, mean of critic scores; WGAN-GP's penalty needs a
# differentiable backward, which tnet does not have
def wgan(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim
    nz = 4
    netG = nn.Sequential(nn.Linear(nz, 16), nn.ReLU(True), nn.Linear(16, 36), nn.Tanh())
    netD = nn.Sequential(nn.Linear(36, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 1))
    init = load(m, nn.ModuleList([netG, netD]), state)
    optimizerD = optim.RMSprop(netD.parameters(), lr=5e-5)
    optimizerG = optim.RMSprop(netG.parameters(), lr=5e-5)
    one = torch.FloatTensor([1])
    mone = one * -1
    clip_value = 0.01
    losses = []
    for i, (imgs, _) in enumerate(batches(2, 2, (3, 1, 6, 6))):
        real_imgs = torch.tensor(imgs).view(imgs.shape[0], -1)
        for p in netD.parameters():
            p.requires_grad = True
        optimizerD.zero_grad()
        z = torch.Tensor(noise(20 + i, imgs.shape[0], nz))
        fake_imgs = netG(z).detach()
        loss_D = -torch.mean(netD(real_imgs)) + torch.mean(netD(fake_imgs))
        loss_D.backward()
        optimizerD.step()
        for p in netD.parameters():
            p.data.clamp_(-clip_value, clip_value)
        for p in netD.parameters():
            p.requires_grad = False  # to avoid computation
        optimizerG.zero_grad()
        errG = netD(netG(z)).mean(0).view(1)
        errG.backward(mone)
        optimizerG.step()
        losses += [loss_D.item(), errG.item(), max(p.abs().max().item() for p in netD.parameters())]
    assert losses[-1] <= clip_value
    return init, losses


def test_wgan():
    compare(wgan)


def test_wgan_gp_penalty(ieee):
    """The PyTorch-GAN WGAN-GP penalty (autograd.grad with create_graph), then its backward: the
    critic's gradients match torch's."""
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((1, 6)), rng.standard_normal(1)
    real, fake, alpha = rng.standard_normal((3, 6)), rng.standard_normal((3, 6)), rng.random((3, 1))

    def compute_gradient_penalty(m):
        torch, nn = m.torch, m.nn
        autograd = torch.autograd
        D = nn.Linear(6, 1)
        with torch.no_grad():
            D.weight.copy_(torch.tensor(w, dtype=torch.float32))
            D.bias.copy_(torch.tensor(b, dtype=torch.float32))
        real_samples, fake_samples = (torch.tensor(v, dtype=torch.float32) for v in (real, fake))
        interpolates = (torch.tensor(alpha, dtype=torch.float32) * real_samples +
                        ((1 - torch.tensor(alpha, dtype=torch.float32)) * fake_samples)).requires_grad_(True)
        d_interpolates = D(interpolates)
        ones = torch.ones(real_samples.shape[0], 1).requires_grad_(False)
        gradients = autograd.grad(outputs=d_interpolates, inputs=interpolates, grad_outputs=ones,
                                  create_graph=True, retain_graph=True, only_inputs=True)[0]
        gradients = gradients.view(gradients.size(0), -1)
        gp = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
        (D(fake_samples).mean() - D(real_samples).mean() + 10 * gp).backward()
        return [gp.item(), *D.weight.grad.flatten().tolist(), *D.bias.grad.tolist()]

    np.testing.assert_allclose(compute_gradient_penalty(imports("tnet")),
                               compute_gradient_penalty(imports("torch")), rtol=1e-5,
                               atol=1e-6)


# (c) pytorch/examples' vae: reparameterize with randn_like, BCE with reduction='sum' plus the KL term
def vae(m, state=None, eps=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class VAE(nn.Module):
        def __init__(self):
            super(VAE, self).__init__()
            self.fc1 = nn.Linear(784, 16)
            self.fc21 = nn.Linear(16, 4)
            self.fc22 = nn.Linear(16, 4)
            self.fc3 = nn.Linear(4, 16)
            self.fc4 = nn.Linear(16, 784)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar):
            std = torch.exp(0.5 * logvar)
            eps_ = torch.randn_like(std) if eps is None else torch.tensor(eps)
            return mu + eps_ * std

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return torch.sigmoid(self.fc4(h3))

        def forward(self, x):
            mu, logvar = self.encode(x.view(-1, 784))
            z = self.reparameterize(mu, logvar)
            return self.decode(z), mu, logvar

    def loss_function(recon_x, x, mu, logvar):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
        KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return BCE + KLD

    model = VAE()
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(3)
    train_loss, losses = 0, []
    model.train()
    for batch_idx in range(2):
        data = torch.tensor(rng.random((2, 1, 28, 28), dtype=np.float32))
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        losses.append(loss.item() / len(data))
    model.eval()
    with torch.no_grad():
        sample = torch.tensor(noise(4, 3, 4)) if eps is not None else torch.randn(3, 4)
        sample = model.decode(sample).cpu()
        comparison = torch.cat([data[:2], recon_batch.view(2, 1, 28, 28)[:2]])
    assert tuple(sample.view(3, 1, 28, 28).shape) == (3, 1, 28, 28) and tuple(comparison.shape) == (4, 1, 28, 28)
    losses.append(sample.sum().item())
    return init, losses


def test_vae():
    _, losses = vae(imports("tnet"))
    assert all(math.isfinite(v) for v in losses)
    compare(vae, eps=noise(5, 2, 4))


# (d) a convolutional autoencoder: MaxPool2d(return_indices=True) undone by MaxUnpool2d, Upsample, a ConvTranspose2d
# given the input's output_size, Sigmoid output and MSELoss
def conv_autoencoder(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class Autoencoder(nn.Module):
        def __init__(self):
            super(Autoencoder, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.pool = nn.MaxPool2d(2, 2, return_indices=True)
            self.conv2 = nn.Conv2d(4, 2, 3, padding=1)
            self.unpool = nn.MaxUnpool2d(2, 2)
            self.up = nn.Upsample(scale_factor=2, mode='nearest')
            self.t_conv1 = nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1)
            self.conv3 = nn.Conv2d(4, 1, 3, padding=1)

        def forward(self, input):
            x = F.relu(self.conv1(input))
            x, idx1 = self.pool(x)
            x = F.relu(self.conv2(x))
            size = x.size()
            x, idx2 = self.pool(x)
            encoded = x
            x = self.unpool(x, idx2, output_size=size) + self.up(encoded)
            x = F.relu(self.t_conv1(x, output_size=input.size()))
            x = torch.sigmoid(self.conv3(x))
            return x, encoded

    model = Autoencoder()
    init = load(m, model, state)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    rng = np.random.default_rng(6)
    losses = []
    for epoch in range(2):
        images = torch.from_numpy(rng.random((2, 1, 12, 12), dtype=np.float32))
        optimizer.zero_grad()
        outputs, encoded = model(images)
        loss = criterion(outputs, images)
        loss.backward()
        optimizer.step()
        losses.append(loss.item() * images.size(0))
        print('Epoch: {} \tTraining Loss: {:.6f}'.format(epoch, loss.item()))
    assert tuple(encoded.shape) == (2, 2, 3, 3) and tuple(outputs.shape) == (2, 1, 12, 12)
    # a denoising autoencoder's corrupted input
    noisy_imgs = images + 0.5 * torch.from_numpy(noise(7, *images.shape))
    noisy_imgs = np.clip(noisy_imgs.numpy(), 0., 1.)
    noisy_imgs = torch.clamp(torch.from_numpy(noisy_imgs), 0., 1.)
    with torch.no_grad():
        output = model(noisy_imgs)[0].view(2, 1, 12, 12).detach().numpy()
    losses.append(float(output.sum()))
    return init, losses


def test_conv_autoencoder():
    compare(conv_autoencoder)


# (e) a conditional GAN: nn.Embedding of the labels concatenated to the noise, a linear generator and
# discriminator, MSELoss (LSGAN), labels drawn with np.random.randint into a LongTensor
def cgan(m, state=None):
    torch, nn = m.torch, m.nn
    n_classes, latent_dim, img_shape = 3, 4, (1, 4, 4)

    class Generator(nn.Module):
        def __init__(self):
            super(Generator, self).__init__()
            self.label_emb = nn.Embedding(n_classes, n_classes)

            def block(in_feat, out_feat, normalize=True):
                layers = [nn.Linear(in_feat, out_feat)]
                if normalize:
                    layers.append(nn.BatchNorm1d(out_feat, 0.8))
                layers.append(nn.LeakyReLU(0.2, inplace=True))
                return layers

            self.model = nn.Sequential(
                *block(latent_dim + n_classes, 8, normalize=False),
                *block(8, 16),
                nn.Linear(16, int(np.prod(img_shape))),
                nn.Tanh()
            )

        def forward(self, noise, labels):
            gen_input = torch.cat((self.label_emb(labels), noise), -1)
            img = self.model(gen_input)
            img = img.view(img.size(0), *img_shape)
            return img

    class Discriminator(nn.Module):
        def __init__(self):
            super(Discriminator, self).__init__()
            self.label_embedding = nn.Embedding(n_classes, n_classes)
            self.model = nn.Sequential(
                nn.Linear(n_classes + int(np.prod(img_shape)), 8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Linear(8, 8),
                nn.Dropout(0.0),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Linear(8, 1),
            )

        def forward(self, img, labels):
            d_in = torch.cat((img.view(img.size(0), -1), self.label_embedding(labels)), -1)
            validity = self.model(d_in)
            return validity

    adversarial_loss = torch.nn.MSELoss()
    generator, discriminator = Generator(), Discriminator()
    init = load(m, nn.ModuleList([generator, discriminator]), state)
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    cuda = torch.cuda.is_available()
    if cuda:
        generator.cuda()
        discriminator.cuda()
        adversarial_loss.cuda()
    FloatTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    LongTensor = torch.cuda.LongTensor if cuda else torch.LongTensor
    rng = np.random.default_rng(8)
    losses = []
    for i, (imgs, labels) in enumerate(batches(9, 2, (3, *img_shape), classes=n_classes)):
        batch_size = imgs.shape[0]
        valid = FloatTensor(batch_size, 1).fill_(1.0)
        fake = FloatTensor(batch_size, 1).fill_(0.0)
        real_imgs = torch.tensor(imgs).type(FloatTensor)
        labels = torch.tensor(labels).type(LongTensor)
        optimizer_G.zero_grad()
        z = FloatTensor(rng.normal(0, 1, (batch_size, latent_dim)).astype(np.float32))
        gen_labels = LongTensor(rng.integers(0, n_classes, batch_size))
        gen_imgs = generator(z, gen_labels)
        validity = discriminator(gen_imgs, gen_labels)
        g_loss = adversarial_loss(validity, valid)
        g_loss.backward()
        optimizer_G.step()
        optimizer_D.zero_grad()
        validity_real = discriminator(real_imgs, labels)
        d_real_loss = adversarial_loss(validity_real, valid)
        validity_fake = discriminator(gen_imgs.detach(), gen_labels)
        d_fake_loss = adversarial_loss(validity_fake, fake)
        d_loss = (d_real_loss + d_fake_loss) / 2
        d_loss.backward()
        optimizer_D.step()
        losses += [d_loss.item(), g_loss.item()]
    # sample_image: a grid of generated digits ranging from 0 to n_classes for each row
    z = FloatTensor(rng.normal(0, 1, (n_classes ** 2, latent_dim)).astype(np.float32))
    labels = LongTensor(np.array([num for _ in range(n_classes) for num in range(n_classes)]))
    gen_imgs = generator(z, labels)
    losses.append(gen_imgs.data.sum().item())
    return init, losses


def test_cgan():
    compare(cgan)


# (f) a capsule network: squash with norm(dim=-1, keepdim=True), dynamic routing with softmax over the input
# capsules and matmul of broadcast 5-D tensors, a torch.eye mask of the longest capsule, margin loss
def capsnet(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    def squash(s, dim=-1):
        squared_norm = (s ** 2).sum(dim=dim, keepdim=True)
        return squared_norm / (1 + squared_norm) * s / (torch.sqrt(squared_norm) + 1e-8)

    class PrimaryCaps(nn.Module):
        def __init__(self, num_capsules=2, in_channels=4, out_channels=2, kernel_size=3):
            super(PrimaryCaps, self).__init__()
            self.capsules = nn.ModuleList([
                nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=2, padding=0)
                for _ in range(num_capsules)])

        def forward(self, x):
            u = [capsule(x) for capsule in self.capsules]
            u = torch.stack(u, dim=1)
            u = u.view(x.size(0), -1, 2)
            return squash(u)

    class DigitCaps(nn.Module):
        def __init__(self, num_capsules=3, num_routes=8, in_channels=2, out_channels=4, routing_iters=2):
            super(DigitCaps, self).__init__()
            self.num_routes, self.num_capsules, self.routing_iters = num_routes, num_capsules, routing_iters
            self.W = nn.Parameter(torch.randn(1, num_routes, num_capsules, out_channels, in_channels) * 0.1)

        def forward(self, x):
            batch_size = x.size(0)
            x = torch.stack([x] * self.num_capsules, dim=2).unsqueeze(4)
            W = torch.cat([self.W] * batch_size, dim=0)
            u_hat = torch.matmul(W, x)  # [B, routes, caps, out, 1]
            b_ij = torch.zeros(1, self.num_routes, self.num_capsules, 1)
            for iteration in range(self.routing_iters):
                c_ij = F.softmax(b_ij, dim=1)
                c_ij = torch.cat([c_ij] * batch_size, dim=0).unsqueeze(4)
                s_j = (c_ij * u_hat).sum(dim=1, keepdim=True)
                v_j = squash(s_j, dim=-2)
                if iteration < self.routing_iters - 1:
                    a_ij = torch.matmul(u_hat.transpose(3, 4), torch.cat([v_j] * self.num_routes, dim=1))
                    b_ij = b_ij + a_ij.squeeze(4).mean(dim=0, keepdim=True)
            return v_j.squeeze(1)

    class CapsNet(nn.Module):
        def __init__(self):
            super(CapsNet, self).__init__()
            self.conv1 = nn.Conv2d(1, 4, kernel_size=3, stride=1)
            self.primary_capsules = PrimaryCaps()
            self.digit_capsules = DigitCaps()
            self.decoder = nn.Sequential(nn.Linear(4 * 3, 16), nn.ReLU(inplace=True), nn.Linear(16, 64), nn.Sigmoid())

        def forward(self, data):
            output = self.digit_capsules(self.primary_capsules(F.relu(self.conv1(data))))
            classes = torch.sqrt((output ** 2).sum(2))
            classes = F.softmax(classes, dim=1)
            _, max_length_indices = classes.max(dim=1)
            masked = torch.eye(3)
            masked = masked.index_select(dim=0, index=max_length_indices.squeeze(1).data)
            reconstructions = self.decoder((output * masked[:, :, None, None]).view(data.size(0), -1))
            return output, reconstructions, masked

        def margin_loss(self, x, labels, size_average=True):
            batch_size = x.size(0)
            v_c = torch.sqrt((x ** 2).sum(dim=2, keepdim=True))
            left = F.relu(0.9 - v_c).view(batch_size, -1) ** 2
            right = F.relu(v_c - 0.1).view(batch_size, -1) ** 2
            loss = labels * left + 0.5 * (1.0 - labels) * right
            return loss.sum(dim=1).mean()

        def reconstruction_loss(self, data, reconstructions):
            loss = F.mse_loss(reconstructions.view(reconstructions.size(0), -1), data.view(data.size(0), -1))
            return loss * 0.0005

    model = CapsNet()
    init = load(m, model, state)
    optimizer = torch.optim.Adam(model.parameters())
    losses = []
    for data, target in batches(10, 1, (2, 1, 8, 8), classes=3):
        data, target = torch.tensor(data), torch.tensor(target)
        target = torch.sparse.torch.eye(3).index_select(dim=0, index=target) if hasattr(torch, "sparse") \
            else torch.eye(3)[target]
        optimizer.zero_grad()
        output, reconstructions, masked = model(data)
        loss = model.margin_loss(output, target) + model.reconstruction_loss(data, reconstructions)
        loss.backward()
        optimizer.step()
        correct = sum(np.argmax(masked.data.cpu().numpy(), 1) == np.argmax(target.data.cpu().numpy(), 1))
        losses += [loss.item(), float(correct)]
    # a vectorized squash as other repositories write it
    v = squash(output, dim=2)
    losses.append((v.norm(dim=-2, keepdim=True) - output.norm(dim=-2, keepdim=True)).abs().sum().item())
    return init, losses


def test_capsnet():
    compare(capsnet)


# (g) pytorch/examples' word_language_model style: an LSTM language model over token batches, the hidden state
# detached between batches (repackage_hidden, detach_), clip_grad_norm_, CrossEntropyLoss over view(-1, ntokens),
# the perplexity, text generated by torch.multinomial on the softmax of the temperature-scaled logits, and the
# embeddings reused by Embedding.from_pretrained
def char_rnn(m, state=None):
    torch, nn, F = m.torch, m.nn, m.F

    class RNNModel(nn.Module):
        def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0, tie_weights=True):
            super(RNNModel, self).__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, batch_first=True)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.nhid, self.nlayers = nhid, nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))

    def repackage_hidden(h):
        """Wraps hidden states in new Tensors, to detach them from their history."""
        if isinstance(h, torch.Tensor):
            return h.detach()
        else:
            return tuple(repackage_hidden(v) for v in h)

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        return data.view(bsz, -1).contiguous()

    def get_batch(source, i, bptt=3):
        seq_len = min(bptt, source.size(1) - 1 - i)
        data = source[:, i:i + seq_len]
        target = source[:, i + 1:i + 1 + seq_len].reshape(-1)
        return data, target

    ntokens = 7
    corpus = torch.tensor(np.random.default_rng(11).integers(0, ntokens, 23))
    train_data = batchify(corpus, 3)
    model = RNNModel(ntokens, 6, 6, 2)
    init = load(m, model, state)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    losses = []
    model.train()
    total_loss = 0.
    hidden = model.init_hidden(3)
    for batch, i in enumerate(range(0, train_data.size(1) - 1, 3)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-1.0)
        total_loss += loss.item()
        losses.append(loss.item())
    hidden = tuple(h.detach() for h in hidden)
    assert not hidden[0].requires_grad and hidden[0].grad_fn is None
    output, (h, c) = model(data, hidden)
    h.detach_(), c.detach_()  # the older in-place form
    assert h.grad_fn is None and not c.requires_grad
    # the trained embeddings reused, frozen, by another model
    frozen = nn.Embedding.from_pretrained(model.encoder.weight.data, freeze=True)
    losses.append(frozen(data).sum().item())
    cur_loss = total_loss / len(losses)
    print('| loss {:5.2f} | ppl {:8.2f}'.format(cur_loss, math.exp(cur_loss)))
    # generate.py: sampling one token at a time from a temperature-scaled distribution
    model.eval()
    hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long)
    words = []
    with torch.no_grad():
        for i in range(3):
            output, hidden = model(input, hidden)
            word_weights = output.squeeze().div(0.8).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
            input.fill_(word_idx)
            words.append(int(word_idx))
    assert all(0 <= w < ntokens for w in words) and optimizer.param_groups[0]["lr"] == 1.0
    return init, losses


def test_char_rnn():
    compare(char_rnn)


# (h) a Siamese network with the contrastive loss (F.pairwise_distance, torch.clamp(margin - d, min=0.0))
def siamese(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class SiameseNetwork(nn.Module):
        def __init__(self):
            super(SiameseNetwork, self).__init__()
            self.cnn1 = nn.Sequential(
                nn.ReflectionPad2d(1), nn.Conv2d(1, 4, kernel_size=3), nn.ReLU(inplace=True), nn.BatchNorm2d(4),
                nn.ReflectionPad2d(1), nn.Conv2d(4, 4, kernel_size=3), nn.ReLU(inplace=True), nn.BatchNorm2d(4))
            self.fc1 = nn.Sequential(nn.Linear(4 * 6 * 6, 16), nn.ReLU(inplace=True), nn.Linear(16, 5))

        def forward_once(self, x):
            output = self.cnn1(x)
            output = output.view(output.size()[0], -1)
            output = self.fc1(output)
            return output

        def forward(self, input1, input2):
            output1 = self.forward_once(input1)
            output2 = self.forward_once(input2)
            return output1, output2

    class ContrastiveLoss(torch.nn.Module):
        def __init__(self, margin=2.0):
            super(ContrastiveLoss, self).__init__()
            self.margin = margin

        def forward(self, output1, output2, label):
            euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
            loss_contrastive = torch.mean((1 - label) * torch.pow(euclidean_distance, 2) +
                                          (label) * torch.pow(torch.clamp(self.margin - euclidean_distance,
                                                                          min=0.0), 2))
            return loss_contrastive

    net = SiameseNetwork()
    init = load(m, net, state)
    criterion = ContrastiveLoss()
    optimizer = optim.Adam(net.parameters(), lr=0.0005)
    rng = np.random.default_rng(12)
    losses = []
    for i in range(2):
        img0, img1 = (torch.from_numpy(noise(30 + i + k, 3, 1, 6, 6)) for k in (0, 10))
        label = torch.from_numpy(np.array(rng.integers(0, 2, (3, 1)), dtype=np.float32))
        optimizer.zero_grad()
        output1, output2 = net(img0, img1)
        loss_contrastive = criterion(output1, output2, label)
        loss_contrastive.backward()
        optimizer.step()
        losses.append(loss_contrastive.item())
    net.eval()
    with torch.no_grad():
        output1, output2 = net(img0, img1)
        euclidean_distance = F.pairwise_distance(output1, output2)
        losses += euclidean_distance.tolist() + F.cosine_similarity(output1, output2).tolist()
    print('Dissimilarity: {:.2f}'.format(euclidean_distance[0].item()))
    return init, losses


def test_siamese():
    compare(siamese)


# (i) a triplet network: nn.TripletMarginLoss on embeddings normalized with F.normalize, and the hardest negative
# mined from torch.cdist
def triplet(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class EmbeddingNet(nn.Module):
        def __init__(self):
            super(EmbeddingNet, self).__init__()
            self.convnet = nn.Sequential(nn.Conv2d(1, 4, 3), nn.PReLU(), nn.MaxPool2d(2, stride=2))
            self.fc = nn.Sequential(nn.Linear(4 * 3 * 3, 8), nn.PReLU(), nn.Linear(8, 3))

        def forward(self, x):
            output = self.convnet(x)
            output = output.view(output.size()[0], -1)
            output = self.fc(output)
            return F.normalize(output, p=2, dim=1)

    class TripletNet(nn.Module):
        def __init__(self, embedding_net):
            super(TripletNet, self).__init__()
            self.embedding_net = embedding_net

        def forward(self, x1, x2, x3):
            return self.embedding_net(x1), self.embedding_net(x2), self.embedding_net(x3)

    model = TripletNet(EmbeddingNet())
    init = load(m, model, state)
    loss_fn = nn.TripletMarginLoss(margin=1.0, p=2)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    scheduler = optim.lr_scheduler.StepLR(optimizer, 8, gamma=0.1, last_epoch=-1)
    losses = []
    for i in range(2):
        anchor, positive, negative = (torch.tensor(noise(40 + 3 * i + k, 4, 1, 8, 8)) for k in range(3))
        optimizer.zero_grad()
        outputs = model(anchor, positive, negative)
        loss = loss_fn(*outputs)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    # batch-hard mining: the hardest negative of each anchor from the pairwise distances
    with torch.no_grad():
        emb = model.embedding_net(torch.cat([anchor, negative]))
        labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
        dist = torch.cdist(emb, emb, p=2)
        mask = labels.unsqueeze(0) == labels.unsqueeze(1)
        hardest = (dist + mask.float() * 1e6).min(dim=1)[0]
        losses += [hardest.sum().item(), F.triplet_margin_loss(emb[:4], emb[4:], emb.flip(0)[:4]).item()]
    return init, losses


def test_triplet():
    compare(triplet)


# (j) a U-Net: DoubleConv blocks, torch.cat skip connections after F.pad or F.interpolate to the skip's size,
# CrossEntropyLoss on [N, C, H, W] logits with [N, H, W] targets, and the Dice loss from softmax + one_hot + permute
def unet(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class DoubleConv(nn.Module):
        def __init__(self, in_channels, out_channels, mid_channels=None):
            super().__init__()
            if not mid_channels:
                mid_channels = out_channels
            self.double_conv = nn.Sequential(
                nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(mid_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True))

        def forward(self, x):
            return self.double_conv(x)

    class Down(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

        def forward(self, x):
            return self.maxpool_conv(x)

    class Up(nn.Module):
        def __init__(self, in_channels, out_channels, bilinear=True):
            super().__init__()
            self.bilinear = bilinear
            if bilinear:
                self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
                self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
            else:
                self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
                self.conv = DoubleConv(in_channels, out_channels)

        def forward(self, x1, x2):
            x1 = self.up(x1)
            if self.bilinear:
                diffY = x2.size()[2] - x1.size()[2]
                diffX = x2.size()[3] - x1.size()[3]
                x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
            else:
                x1 = F.interpolate(x1, size=x2.shape[2:], mode='bilinear', align_corners=False)
            x = torch.cat([x2, x1], dim=1)
            return self.conv(x)

    class UNet(nn.Module):
        def __init__(self, n_channels, n_classes):
            super(UNet, self).__init__()
            self.inc = DoubleConv(n_channels, 4)
            self.down1 = Down(4, 8)
            self.down2 = Down(8, 8)
            self.up1 = Up(16, 8, bilinear=True)
            self.up2 = Up(8, 4, bilinear=False)
            self.outc = nn.Conv2d(4, n_classes, kernel_size=1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            x = self.up1(x3, x2)
            x = self.up2(x, x1)
            return self.outc(x)

    def dice_loss(input, target, n_classes, epsilon=1e-6):
        input = F.softmax(input, dim=1).float()
        target = F.one_hot(target, n_classes).permute(0, 3, 1, 2).float()
        sum_dim = (-1, -2, -3)
        inter = 2 * (input * target).sum(dim=sum_dim)
        sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
        sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
        dice = (inter + epsilon) / (sets_sum + epsilon)
        return 1 - dice.mean()

    n_classes = 3
    model = UNet(n_channels=3, n_classes=n_classes)
    init = load(m, model, state)
    optimizer = optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9, foreach=True)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=5)
    criterion = nn.CrossEntropyLoss()
    rng = np.random.default_rng(13)
    losses = []
    for i in range(2):
        images = torch.tensor(noise(50 + i, 2, 3, 9, 11)).to(dtype=torch.float32, memory_format=torch.channels_last)
        true_masks = torch.tensor(rng.integers(0, n_classes, (2, 9, 11))).to(dtype=torch.long)
        masks_pred = model(images)
        loss = criterion(masks_pred, true_masks)
        loss += dice_loss(masks_pred, true_masks, n_classes)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        mask_pred = model(images)
        mask_pred = mask_pred.argmax(dim=1)
        pixel_acc = (mask_pred == true_masks).float().mean().item()
        scheduler.step(pixel_acc)
        probs = F.interpolate(model(images), (18, 22), mode='bilinear')
    assert tuple(probs.shape) == (2, 3, 18, 22)
    return init, losses + [pixel_acc, probs.sum().item()]


def test_unet():
    compare(unet)


# (k) a RealNVP affine coupling layer: a checkerboard mask, torch.chunk of the scale-and-shift net's output,
# tanh-bounded log scales, the log-determinant summed over dims, and the standard normal prior's log-likelihood
def realnvp(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    class Coupling(nn.Module):
        def __init__(self, dim, hidden, mask):
            super().__init__()
            self.register_buffer('mask', mask)
            self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 2 * dim))
            self.scale = nn.Parameter(torch.zeros(1, dim))

        def forward(self, x, reverse=False):
            x_masked = x * self.mask
            s, t = self.net(x_masked).chunk(2, dim=1)
            s = self.scale * torch.tanh(s)
            s = s * (1 - self.mask)
            t = t * (1 - self.mask)
            if not reverse:
                y = x_masked + (1 - self.mask) * (x * torch.exp(s) + t)
                return y, s.sum(dim=1)
            return x_masked + (1 - self.mask) * ((x - t) * torch.exp(-s)), -s.sum(dim=1)

    class RealNVP(nn.Module):
        def __init__(self, dim, n_layers=2):
            super().__init__()
            mask = torch.arange(dim) % 2
            self.layers = nn.ModuleList([Coupling(dim, 8, (mask if i % 2 == 0 else 1 - mask).float())
                                         for i in range(n_layers)])

        def forward(self, x):
            log_det = torch.zeros(x.shape[0])
            for layer in self.layers:
                x, ld = layer(x)
                log_det = log_det + ld
            return x, log_det

        def inverse(self, z):
            for layer in reversed(self.layers):
                z, _ = layer(z, reverse=True)
            return z

        def log_prob(self, x):
            z, log_det = self(x)
            log_pz = -0.5 * (z ** 2).sum(dim=1) - 0.5 * z.size(1) * math.log(2 * math.pi)
            return log_pz + log_det

    def dequantize_logit(x, alpha=0.05):
        """The flow models' preprocessing of [0, 1] pixels: uniform noise, then a logit."""
        y = alpha + (1 - 2 * alpha) * x
        return torch.log(y) - torch.log1p(-y)

    flow = RealNVP(6)
    init = load(m, flow, state)
    optimizer = optim.Adam(flow.parameters(), lr=1e-2)
    rng = np.random.default_rng(14)
    losses = []
    for i in range(2):
        x = dequantize_logit(torch.tensor(rng.random((5, 6), dtype=np.float32)))
        loss = -flow.log_prob(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        bits_per_dim = loss.item() / (math.log(2) * 6)
        losses += [loss.item(), bits_per_dim]
    with torch.no_grad():
        z, _ = flow(x)
        x_rec = flow.inverse(z)
        losses.append((x_rec - x).abs().max().item())
    assert losses[-1] < 1e-4
    return init, losses[:-1]


def test_realnvp():
    compare(realnvp)


# (l) a transformer classifier over MNIST rows: nn.TransformerEncoder of TransformerEncoderLayer(batch_first=True),
# a learned positional embedding nn.Parameter, a cls token, src_key_padding_mask for padded rows, a warmup LambdaLR
def transformer_rows(m, state=None):
    torch, nn, optim = m.torch, m.nn, m.optim

    class TransformerClassifier(nn.Module):
        def __init__(self, input_dim=6, d_model=8, nhead=2, num_layers=2, num_classes=10, max_len=8):
            super().__init__()
            self.embedding = nn.Linear(input_dim, d_model)
            self.cls_token = nn.Parameter(torch.zeros(1, 1, d_model))
            self.pos_embedding = nn.Parameter(torch.randn(1, max_len + 1, d_model) * 0.02)
            encoder_layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=nhead, dim_feedforward=16,
                                                       dropout=0.0, batch_first=True)
            self.transformer_encoder = nn.TransformerEncoder(encoder_layer, num_layers=num_layers,
                                                             enable_nested_tensor=False)
            self.fc = nn.Linear(d_model, num_classes)

        def forward(self, x, src_key_padding_mask=None):
            x = self.embedding(x)
            cls = self.cls_token.repeat(x.size(0), 1, 1)
            x = torch.cat([cls, x], dim=1)
            x = x + self.pos_embedding[:, :x.size(1), :]
            if src_key_padding_mask is not None:
                pad = torch.zeros(x.size(0), 1, dtype=torch.bool, device=x.device)
                src_key_padding_mask = torch.cat([pad, src_key_padding_mask], dim=1)
            x = self.transformer_encoder(x, src_key_padding_mask=src_key_padding_mask)
            return self.fc(x[:, 0, :])

    model = TransformerClassifier()
    init = load(m, model, state)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    warmup = 2
    scheduler = optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
    criterion = nn.CrossEntropyLoss()
    losses = []
    lengths = torch.tensor([6, 4, 5])
    for images, labels in batches(15, 1, (3, 1, 6, 6)):
        images, labels = torch.tensor(images), torch.tensor(labels)
        x = images.squeeze(1)  # [B, 28 rows, 28 pixels] in the original
        mask = torch.arange(x.size(1)).unsqueeze(0) >= lengths.unsqueeze(1)
        x = x.masked_fill(mask.unsqueeze(-1), 0.0)
        optimizer.zero_grad()
        outputs = model(x, src_key_padding_mask=mask)
        loss = criterion(outputs, labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        _, predicted = torch.max(model(x, src_key_padding_mask=mask).data, 1)
        losses += [(predicted == labels).sum().item(), model(x).sum().item()]
    return init, losses


def test_transformer_rows():
    compare(transformer_rows)


# (m) a Gaussian mixture fitted by gradient descent on its negative log-likelihood (torch.logsumexp over the
# components, log_softmax of the mixing logits; the same mixture as MixtureSameFamily) and an energy-based toy whose
# log partition is a logsumexp over a grid
def gaussian_mixture(m, state=None):
    torch, nn, F, optim = m.torch, m.nn, m.F, m.optim

    class GMM(nn.Module):
        def __init__(self, n_components=3, dim=2):
            super().__init__()
            self.logits = nn.Parameter(torch.zeros(n_components))
            self.means = nn.Parameter(torch.randn(n_components, dim))
            self.log_stds = nn.Parameter(torch.zeros(n_components, dim))

        def forward(self, x):
            x = x.unsqueeze(1)  # [N, 1, D] against [K, D]
            log_pdf = -0.5 * (((x - self.means) / self.log_stds.exp()) ** 2 + 2 * self.log_stds +
                              math.log(2 * math.pi)).sum(-1)
            log_weights = F.log_softmax(self.logits, dim=0)
            return torch.logsumexp(log_pdf + log_weights, dim=1)

    class Energy(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(2, 8), nn.Softplus(), nn.Linear(8, 1))

        def forward(self, x):
            return self.net(x).squeeze(-1)

    gmm, energy = GMM(), Energy()
    init = load(m, nn.ModuleList([gmm, energy]), state)
    optimizer = optim.Adam(list(gmm.parameters()) + list(energy.parameters()), lr=0.05)
    grid = torch.stack(torch.meshgrid(torch.linspace(-3, 3, 5), torch.linspace(-3, 3, 5), indexing='ij'),
                       dim=-1).view(-1, 2)
    cell = math.log((6 / 4) ** 2)
    losses = []
    for i in range(2):
        x = torch.tensor(noise(60 + i, 7, 2) * 0.5 + 1.0)
        nll = -gmm(x).mean()
        log_z = torch.logsumexp(-energy(grid), dim=0) + cell
        ebm_nll = energy(x).mean() + log_z
        loss = nll + ebm_nll
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [nll.item(), ebm_nll.item()]
    with torch.no_grad():
        responsibilities = F.softmax(gmm.logits, 0).log() + 0 * gmm(x).unsqueeze(1)
        losses += [responsibilities.exp().sum().item(), gmm.log_stds.exp().max().item()]
        # the same mixture from torch.distributions
        D = torch.distributions
        mix = D.MixtureSameFamily(D.Categorical(logits=gmm.logits),
                                  D.Independent(D.Normal(gmm.means, gmm.log_stds.exp()), 1))
        assert (mix.log_prob(x) - gmm(x)).abs().max().item() < 1e-4 and tuple(mix.sample((4,)).shape) == (4, 2)
        u = D.Uniform(-3.0, 3.0).sample((6, 2))  # other draws in tnet than in torch: checked, not compared
        assert tuple(u.shape) == (6, 2) and u.abs().max().item() <= 3 and math.isfinite(mix.log_prob(u).sum().item())
    return init, losses


def test_gaussian_mixture():
    compare(gaussian_mixture)


# (n) a VAE written with torch.distributions: the posterior Normal(mu, exp(0.5 * logvar)) sampled by rsample, its
# KL to the prior by kl_divergence of Independents, a Bernoulli(logits=...) pixel likelihood, and a mixture prior's
# component drawn from a Categorical
def vae_distributions(m, state=None, sample=True):
    torch, nn, optim = m.torch, m.nn, m.optim
    D = torch.distributions

    class Encoder(nn.Module):
        def __init__(self, latent=3):
            super().__init__()
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(36, 16), nn.ReLU())
            self.mu, self.logvar = nn.Linear(16, latent), nn.Linear(16, latent)

        def forward(self, x):
            h = self.net(x)
            return D.Independent(D.Normal(self.mu(h), torch.exp(0.5 * self.logvar(h))), 1)

    encoder = Encoder()
    decoder = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 36), nn.Unflatten(1, (1, 6, 6)))
    init = load(m, nn.ModuleList([encoder, decoder]), state)
    optimizer = optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-3)
    rng = np.random.default_rng(16)
    losses = []
    for i in range(2):
        x = torch.tensor((rng.random((4, 1, 6, 6)) > 0.5).astype(np.float32))
        q_z = encoder(x)
        z = q_z.rsample() if sample else q_z.mean
        prior = D.Independent(D.Normal(torch.zeros_like(q_z.mean), torch.ones_like(q_z.mean)), 1)
        p_x = D.Independent(D.Bernoulli(logits=decoder(z)), 3)
        elbo = p_x.log_prob(x) - D.kl_divergence(q_z, prior)
        loss = -elbo.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        mixture = D.Categorical(logits=torch.zeros(3))
        k = mixture.sample((5,))
        means = torch.eye(3)[k]
        z = D.Normal(means, 0.1).sample()
        images = D.Bernoulli(logits=decoder(z)).sample()
        assert tuple(images.shape) == (5, 1, 6, 6) and set(images.unique().tolist()) <= {0.0, 1.0}
        losses.append(-D.Normal(torch.zeros(3), 1.0).log_prob(torch.eye(3)).sum().item())
    return init, losses


def test_vae_distributions():
    _, losses = vae_distributions(imports("tnet"))
    assert all(math.isfinite(v) for v in losses)
    compare(vae_distributions, sample=False)
