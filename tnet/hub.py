"""torch.hub's loaders, which copied model files import at the top (`from torch.hub import
load_state_dict_from_url`: torchvision's resnet.py and densenet.py before 0.13; torch.utils.model_zoo's
`load_url`), so that such a file imports and builds its models. torch's published weights are
pickles, which tnet never reads: asking for them raises, naming the way. Convert them once where
torch is installed, `tnet.save(torch.hub.load_state_dict_from_url(url), path)`, then
`model.load_state_dict(tnet.load(path))`."""

_HOW = ("torch's published weights are pickles, which tnet does not read; convert them once where torch is "
        "installed, tnet.save(torch.hub.load_state_dict_from_url(url), path), then "
        "model.load_state_dict(tnet.load(path))")


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False, file_name=None,
                             weights_only=False):
    raise NotImplementedError(f"tnet.hub.load_state_dict_from_url({url!r}): {_HOW}")


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    raise NotImplementedError(f"tnet.hub.load({repo_or_dir!r}, {model!r}): hub models run torch's code; {_HOW}")
