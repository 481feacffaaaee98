"""What the CLI says when an allocation fails: each allocator's message cut to the sizes that matter.
The CLI's own test (tests/test_cli.py) covers numpy's and torch's CPU messages end to end."""

import pytest
import torch

from awrsr.errors import out_of_memory_detail

# torch 2.x's caching allocator, as a user sees it (one line of several sentences)
CUDA_MESSAGE = (
    "CUDA out of memory. Tried to allocate 1.95 GiB. GPU 0 has a total capacity of 14.57 GiB of which 1.58 GiB "
    "is free. Process 2493055 has 12.02 GiB memory in use. Including non-PyTorch memory, this process has 966.00 "
    "MiB memory in use. Of the allocated memory 734.07 MiB is allocated by PyTorch, and 33.93 MiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management"
)


def test_cudas_message_is_cut_to_the_sizes():
    detail = out_of_memory_detail(torch.OutOfMemoryError(CUDA_MESSAGE))
    assert detail == "tried to allocate 1.95 GiB on GPU 0, which has 1.58 GiB free of 14.57 GiB"


def test_an_out_of_memory_error_is_recognised_by_its_type_whatever_its_text():
    # another backend's wording: the type alone says it is an allocation, and its first line is kept
    detail = out_of_memory_detail(torch.OutOfMemoryError("MPS backend out of memory (MPS allocated: 9 GB)\nmore advice"))
    assert detail == "MPS backend out of memory (MPS allocated: 9 GB)"
    assert out_of_memory_detail(torch.OutOfMemoryError("x" * 1000)) == "x" * 300  # capped: one readable line
    assert out_of_memory_detail(torch.OutOfMemoryError("")) == "an allocation failed"


def test_an_empty_memory_error_still_says_something():
    assert out_of_memory_detail(MemoryError()) == "an allocation failed"
    assert out_of_memory_detail(MemoryError("Unable to allocate 8 GiB")) == "Unable to allocate 8 GiB"


def test_windows_cpu_allocator_wording_is_recognised():
    err = RuntimeError("[enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried "
                       "to allocate 2147483648 bytes.")
    assert out_of_memory_detail(err) == "tried to allocate 2.0 GiB"


@pytest.mark.parametrize("err", [RuntimeError("shape mismatch"), ValueError("out of range"), KeyError("memory")])
def test_other_errors_are_not_allocations(err):
    assert out_of_memory_detail(err) is None
