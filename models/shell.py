"""Per-request module shells: new module objects that share every parameter and buffer of a shared
model, so that hooks (captum's DeepLift rules, a recorder of one layer's inputs) registered on the
shell are invisible to every other request.

A loaded model is shared by all requests of the API process; a forward hook registered on it fires in
every concurrent forward pass of the same module, and a gradient written into its parameters'
``.grad`` is seen (and zeroed) by the others. The shell costs a copy of the Python module objects,
never of a tensor.
"""

from __future__ import annotations

import copy

import torch


def module_shell(module: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``module``'s module tree whose parameters and buffers ARE the original tensors.

    Hooks and attributes set on the shell (or its submodules) stay on the shell; weights are read,
    never copied (the memo maps each tensor to itself).
    """
    memo: dict[int, object] = {}
    for t in list(module.parameters()) + list(module.buffers()):
        memo[id(t)] = t
    return copy.deepcopy(module, memo)


def submodule_of(shell: torch.nn.Module, original_root: torch.nn.Module, original: torch.nn.Module) -> torch.nn.Module:
    """The shell's counterpart of ``original`` (a submodule of ``original_root``)."""
    for name, mod in original_root.named_modules():
        if mod is original:
            return shell.get_submodule(name)
    raise LookupError("the module is not part of the shelled model")
