"""torch.nn.modules.adaptive's import path: AdaptiveLogSoftmaxWithLoss is not implemented in tnet."""
