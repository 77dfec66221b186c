"""Native replay: a recorded program's launches issued from one C call.

A replay (`launch_replay`) re-bases each recorded pointer and calls Triton's C launcher once
per kernel; from Python that costs ~6.5 us per launch on the H200 host (argument tuples,
Triton's parsing of every argument, a GIL release), more than torch's whole eager add. Here
each launch's kernel parameters are packed once, when the program is built, into 8-byte words
exactly as Triton's launcher would pass them; a replay copies the words, writes the re-based
pointers and calls `cuLaunchKernelEx` directly: one Python call per op, a few hundred
nanoseconds per launch besides the driver's own time. Library launches (`Recording.add_call`)
are called back from the same loop, in order.

The C part is built on first use with Triton's own helper (`compile_module_from_src`, the
compiler and CUDA headers every Triton launch already needs; cached by Triton). A program
this packer does not cover (tensor descriptors, kernels needing scratch memory, clusters, a
scalar out of its type's range), or a machine where the build fails, keeps the Python replay;
BARACUDA_NATIVE_REPLAY=0 keeps every program there (`launch_replay.NATIVE`).
"""

from __future__ import annotations

import struct

import torch

_SOURCE = r"""
#include "cuda.h"
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef CUresult (*launch_ex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*error_string_t)(CUresult, const char **);
/* cublasLtMatmul and cublasLtMatmulDescSetAttribute, as the library that built the handles
   exports them (their addresses come with the program) */
typedef int (*lt_matmul_t)(void *, void *, const void *, const void *, void *, const void *,
                           void *, const void *, const void *, void *, void *, void *,
                           const void *, void *, size_t, void *);
typedef int (*lt_set_t)(void *, int, const void *, size_t);
static launch_ex_t launch_ex = NULL;
static error_string_t error_string = NULL;
static PyObject *data_ptr_name = NULL, *acquire_name = NULL, *release_name = NULL;

#define MAX_SLOTS 256
#define MAX_PARAMS 512
#define HEAD 11 /* function, grid x y z, block, shared, flags, n_params, n_patches, call, form */
/* a cuBLASLt call's words (form 1): matmul, set-attribute, handle, descriptor, alpha, layout
   x, layout y, beta, layout d, algo, workspace size, bias attribute, aux attribute (-1: none),
   swap, then the re-based pointers a, b, d, bias, aux, workspace */
enum { LT_MATMUL, LT_SET, LT_HANDLE, LT_DESC, LT_ALPHA, LT_LX, LT_LY, LT_BETA, LT_LD, LT_ALGO,
       LT_WS_SIZE, LT_BIAS_ATTR, LT_AUX_ATTR, LT_SWAP, LT_A, LT_B, LT_D, LT_BIAS, LT_AUX, LT_WS,
       LT_WORDS };

/* A slot's base address: an int, None (0) or an object with data_ptr() (a tensor). */
static int base_of(PyObject *obj, uint64_t *out) {
  if (PyLong_CheckExact(obj)) {
    *out = PyLong_AsUnsignedLongLong(obj);
    return PyErr_Occurred() ? -1 : 0;
  }
  if (obj == Py_None) {
    *out = 0;
    return 0;
  }
  PyObject *p = PyObject_CallMethodNoArgs(obj, data_ptr_name);
  if (p == NULL)
    return -1;
  *out = PyLong_AsUnsignedLongLong(p);
  Py_DECREF(p);
  return PyErr_Occurred() ? -1 : 0;
}

static int gather(PyObject *seq, uint64_t *bases, Py_ssize_t *n) {
  if (seq == Py_None)
    return 0;
  PyObject *fast = PySequence_Fast(seq, "slots must be a sequence");
  if (fast == NULL)
    return -1;
  Py_ssize_t k = PySequence_Fast_GET_SIZE(fast);
  PyObject **items = PySequence_Fast_ITEMS(fast);
  for (Py_ssize_t i = 0; i < k; i++) {
    if (*n >= MAX_SLOTS || base_of(items[i], &bases[(*n)++]) < 0) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "too many replay slots");
      Py_DECREF(fast);
      return -1;
    }
  }
  Py_DECREF(fast);
  return 0;
}

static int cuda_failed(CUresult r) {
  const char *msg = NULL;
  if (error_string != NULL)
    error_string(r, &msg);
  PyErr_Format(PyExc_RuntimeError, "baracuda replay launch failed: CUDA error %d (%s)", (int)r,
               msg ? msg : "unknown");
  return -1;
}

static int call_library(PyObject *entry, const int64_t *patch, int64_t n_patches,
                        const uint64_t *bases, PyObject *stream) {
  PyObject *fn = PyTuple_GET_ITEM(entry, 0), *tmpl = PyTuple_GET_ITEM(entry, 1);
  Py_ssize_t n = PyTuple_GET_SIZE(tmpl);
  PyObject *args = PyTuple_New(n + 1);
  if (args == NULL)
    return -1;
  Py_INCREF(stream);
  PyTuple_SET_ITEM(args, 0, stream);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *v = PyTuple_GET_ITEM(tmpl, i);
    Py_INCREF(v);
    PyTuple_SET_ITEM(args, i + 1, v);
  }
  for (int64_t j = 0; j < n_patches; j++) {
    const int64_t *p = patch + 3 * j;
    PyObject *v = PyLong_FromUnsignedLongLong(bases[p[1]] + (uint64_t)p[2]);
    if (v == NULL) {
      Py_DECREF(args);
      return -1;
    }
    Py_SETREF(PyTuple_GET_ITEM(args, p[0] + 1), v);
  }
  PyObject *r = PyObject_Call(fn, args, NULL);
  Py_DECREF(args);
  if (r == NULL)
    return -1;
  Py_DECREF(r);
  return 0;
}

/* A launch's parameter words with each patched pointer re-based on its slot. */
static void fill(uint64_t *params, const int64_t *words, int64_t n_params, const int64_t *patch,
                 int64_t n_patches, const uint64_t *bases) {
  memcpy(params, words, n_params * 8);
  for (int64_t j = 0; j < n_patches; j++) {
    const int64_t *p = patch + 3 * j;
    params[p[0]] = bases[p[1]] + (uint64_t)p[2];
  }
}

/* One cublasLtMatmul from a call's words (pointers re-based). The descriptor is shared with
   the Python path, which sets its epilogue pointers under the cell's lock: so do we. */
static int call_lt(const uint64_t *p, PyObject *lock, uint64_t stream) {
  lt_matmul_t matmul = (lt_matmul_t)p[LT_MATMUL];
  lt_set_t set = (lt_set_t)p[LT_SET];
  void *desc = (void *)p[LT_DESC];
  if (lock != Py_None) {
    PyObject *r = PyObject_CallMethodNoArgs(lock, acquire_name);
    if (r == NULL)
      return -1;
    Py_DECREF(r);
  }
  int status = 0;
  if ((int64_t)p[LT_BIAS_ATTR] >= 0)
    status = set(desc, (int)p[LT_BIAS_ATTR], &p[LT_BIAS], 8);
  if (status == 0 && (int64_t)p[LT_AUX_ATTR] >= 0)
    status = set(desc, (int)p[LT_AUX_ATTR], &p[LT_AUX], 8);
  const void *x = (const void *)(p[LT_SWAP] ? p[LT_A] : p[LT_B]);
  const void *y = (const void *)(p[LT_SWAP] ? p[LT_B] : p[LT_A]);
  void *d = (void *)p[LT_D];
  if (status == 0)
    status = matmul((void *)p[LT_HANDLE], desc, (const void *)p[LT_ALPHA], x, (void *)p[LT_LX],
                    y, (void *)p[LT_LY], (const void *)p[LT_BETA], d, (void *)p[LT_LD], d,
                    (void *)p[LT_LD], (const void *)p[LT_ALGO], (void *)p[LT_WS],
                    (size_t)p[LT_WS_SIZE], (void *)stream);
  if (lock != Py_None) {
    PyObject *r = PyObject_CallMethodNoArgs(lock, release_name);
    if (r == NULL)
      return -1;
    Py_DECREF(r);
  }
  if (status != 0) {
    PyErr_Format(PyExc_RuntimeError, "baracuda replay: cublasLtMatmul failed: status %d",
                 status);
    return -1;
  }
  return 0;
}

/* What a launch would be given, as a tuple (for tests on machines without a GPU). */
static int log_launch(PyObject *log, const int64_t *h, const uint64_t *params, int64_t n) {
  PyObject *words = PyTuple_New(n);
  if (words == NULL)
    return -1;
  for (int64_t i = 0; i < n; i++) {
    PyObject *v = PyLong_FromUnsignedLongLong(params[i]);
    if (v == NULL) {
      Py_DECREF(words);
      return -1;
    }
    PyTuple_SET_ITEM(words, i, v);
  }
  PyObject *entry = Py_BuildValue("(LLLLLLLN)", (long long)h[0], (long long)h[1],
                                  (long long)h[2], (long long)h[3], (long long)h[4],
                                  (long long)h[5], (long long)h[6], words);
  if (entry == NULL)
    return -1;
  int r = PyList_Append(log, entry);
  Py_DECREF(entry);
  return r;
}

/* run(program: bytes, calls: tuple, stream: int, slots, more_slots, log: list | None) */
static PyObject *run(PyObject *args, PyObject *log) {
  PyObject *program, *calls, *stream_obj, *slots_a, *slots_b;
  if (!PyArg_UnpackTuple(args, "replay", 5, 5, &program, &calls, &stream_obj, &slots_a,
                         &slots_b))
    return NULL;
  if (!PyBytes_CheckExact(program) || !PyTuple_CheckExact(calls)) {
    PyErr_SetString(PyExc_TypeError, "replay(program: bytes, calls: tuple, ...)");
    return NULL;
  }
  uint64_t stream = PyLong_AsUnsignedLongLong(stream_obj);
  if (PyErr_Occurred())
    return NULL;
  uint64_t bases[MAX_SLOTS];
  Py_ssize_t n_bases = 0;
  if (gather(slots_a, bases, &n_bases) < 0 || gather(slots_b, bases, &n_bases) < 0)
    return NULL;
  const int64_t *w = (const int64_t *)PyBytes_AS_STRING(program);
  const int64_t *end = w + PyBytes_GET_SIZE(program) / 8;
  int64_t n_launches = *w++;
  uint64_t params[MAX_PARAMS];
  void *pointers[MAX_PARAMS];
  for (int64_t l = 0; l < n_launches && w + HEAD <= end; l++) {
    const int64_t *h = w;
    int64_t n_params = h[7], n_patches = h[8];
    const int64_t *words = h + HEAD, *patch = words + n_params;
    w = patch + 3 * n_patches;
    if (w > end || n_params > MAX_PARAMS) {
      PyErr_SetString(PyExc_ValueError, "malformed replay program");
      return NULL;
    }
    for (int64_t j = 0; j < n_patches; j++)
      if (patch[3 * j + 1] >= n_bases || ((h[0] != 0 || h[10] == 1) && patch[3 * j] >= n_params)) {
        PyErr_SetString(PyExc_ValueError, "replay slot out of range");
        return NULL;
      }
    if (h[0] == 0 && h[10] == 1) { /* a cuBLASLt call from C */
      if (n_params != LT_WORDS) {
        PyErr_SetString(PyExc_ValueError, "malformed replay program");
        return NULL;
      }
      fill(params, words, n_params, patch, n_patches, bases);
      if (log != NULL) {
        if (log_launch(log, h, params, n_params) < 0)
          return NULL;
        continue;
      }
      if (call_lt(params, PyTuple_GET_ITEM(calls, h[9]), stream) < 0)
        return NULL;
      continue;
    }
    if (h[0] == 0) { /* a library call */
      if (call_library(PyTuple_GET_ITEM(calls, h[9]), patch, n_patches, bases, stream_obj) < 0)
        return NULL;
      continue;
    }
    if (h[1] * h[2] * h[3] == 0)
      continue;
    fill(params, words, n_params, patch, n_patches, bases);
    if (log != NULL) {
      if (log_launch(log, h, params, n_params) < 0)
        return NULL;
      continue;
    }
    if (launch_ex == NULL) {
      PyErr_SetString(PyExc_RuntimeError, "no CUDA driver to launch with");
      return NULL;
    }
    for (int64_t i = 0; i < n_params; i++)
      pointers[i] = &params[i];
    CUlaunchAttribute attrs[2];
    unsigned n_attrs = 0;
    if (h[6] & 1) {
      attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attrs[n_attrs++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (h[6] & 2) {
      attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[n_attrs++].value.cooperative = 1;
    }
    CUlaunchConfig config;
    memset(&config, 0, sizeof(config));
    config.gridDimX = (unsigned)h[1];
    config.gridDimY = (unsigned)h[2];
    config.gridDimZ = (unsigned)h[3];
    config.blockDimX = (unsigned)h[4];
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.sharedMemBytes = (unsigned)h[5];
    config.hStream = (CUstream)stream;
    config.attrs = attrs;
    config.numAttrs = n_attrs;
    CUresult r = launch_ex(&config, (CUfunction)h[0], pointers, NULL);
    if (r != CUDA_SUCCESS && cuda_failed(r) < 0)
      return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *replay(PyObject *self, PyObject *args) { return run(args, NULL); }

static PyObject *dry_run(PyObject *self, PyObject *args) {
  PyObject *log = PyList_New(0);
  if (log == NULL)
    return NULL;
  PyObject *r = run(args, log);
  if (r == NULL) {
    Py_DECREF(log);
    return NULL;
  }
  Py_DECREF(r);
  return log;
}

static PyObject *has_driver(PyObject *self, PyObject *args) {
  return PyBool_FromLong(launch_ex != NULL);
}

static PyMethodDef methods[] = {
    {"replay", replay, METH_VARARGS, "Issue a packed replay program's launches."},
    {"dry_run", dry_run, METH_VARARGS,
     "The launches replay would issue (function, grid, block, shared, flags, parameter words),"
     " library calls made; nothing launched."},
    {"has_driver", has_driver, METH_NOARGS, "Whether libcuda's cuLaunchKernelEx was found."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "baracuda_native_replay", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit_baracuda_native_replay(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib != NULL) { /* without it only dry_run works (has_driver() is False) */
    launch_ex = (launch_ex_t)dlsym(lib, "cuLaunchKernelEx");
    error_string = (error_string_t)dlsym(lib, "cuGetErrorString");
  }
  data_ptr_name = PyUnicode_InternFromString("data_ptr");
  acquire_name = PyUnicode_InternFromString("acquire");
  release_name = PyUnicode_InternFromString("release");
  return data_ptr_name && acquire_name && release_name ? PyModule_Create(&module) : NULL;
}
"""

#: words per launch header (must match HEAD in the C source)
HEAD = 11
#: words of a cuBLASLt call (LT_WORDS in the C source): 14 fixed, then 6 re-based pointers
LT_WORDS = 20
#: library functions whose recorded calls the C loop can make itself: fn -> form(args), which
#: returns (the call's first words, {argument position: word index} for the re-based
#: pointers, the lock its Python path holds or None), or None to keep the Python callback
CALL_FORMS: dict = {}
#: the C module, None when it could not be built (or is not wanted); see `module()`
_MODULE: list = []
#: why the C module cannot launch (empty while it can)
UNAVAILABLE: list[str] = []

#: float parameter types: (struct format of the value, of its bits, right shift); bf16 is the
#: float's upper half, as Triton's pack_bf16 truncates
_FLOAT_FORMS = {"fp32": ("<f", "<I", 0), "f32": ("<f", "<I", 0), "fp64": ("<d", "<Q", 0),
                "fp16": ("<e", "<H", 0), "bf16": ("<f", "<I", 16)}
_INT_BITS = {"i1": (8, True), "i8": (8, True), "i16": (16, True), "i32": (32, True),
             "i64": (64, True), "u1": (8, False), "u8": (8, False), "u16": (16, False),
             "u32": (32, False), "u64": (64, False)}


def build():
    """Compile (or load Triton's cached build of) the C module; raises where it cannot be
    built. Its `dry_run` works without a GPU."""
    from triton.backends.nvidia.driver import include_dirs
    from triton.runtime.build import compile_module_from_src

    return compile_module_from_src(_SOURCE, "baracuda_native_replay", include_dirs=include_dirs)


def module():
    """The C module for replays, built on first use; None where it cannot launch (no
    compiler, no CUDA driver); the reason is in UNAVAILABLE."""
    if _MODULE:
        return _MODULE[0]
    mod = None
    try:
        mod = build()
        if not mod.has_driver():
            UNAVAILABLE.append("no CUDA driver (libcuda.so.1)")
            mod = None
    except Exception as e:  # no compiler or headers: the Python replay serves
        UNAVAILABLE.append(f"{type(e).__name__}: {e}")
    _MODULE.append(mod)
    return mod


def _word(ty: str, value) -> int | None:
    """One kernel parameter as Triton's launcher passes it, in the low bytes of a
    little-endian 64-bit word; None for a value this packer does not cover."""
    if ty in _INT_BITS:
        if type(value) not in (int, bool):
            return None
        bits, signed = _INT_BITS[ty]
        v = int(value)
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        if not lo <= v < hi and not (ty == "i1" and v in (0, 1)):
            return None
        return v & ((1 << bits) - 1)
    form = _FLOAT_FORMS.get(ty)
    if form is None or type(value) not in (int, float, bool):
        return None
    packed, unpacked, shift = form
    try:
        return struct.unpack(unpacked, struct.pack(packed, float(value)))[0] >> shift
    except (OverflowError, struct.error):
        return None


def _kernel_words(compiled, direct, grid, args, patches) -> list[int] | None:
    """Header, parameter words and patches of one Triton launch; None when not covered."""
    if direct is None:  # kernels that need scratch memory keep Triton's Python wrapper
        return None
    launcher, cooperative, pdl = direct
    num_warps, num_ctas, shared = compiled.packed_metadata
    signature = getattr(compiled.src, "signature", None)
    if num_ctas != 1 or not isinstance(signature, dict) or len(signature) != len(args):
        return None
    at = {i: (slot, off) for i, slot, off in patches}
    words, moved = [], []
    for i, (ty, value) in enumerate(zip(signature.values(), args)):
        if not isinstance(ty, str):
            return None  # a tuple parameter
        if ty == "constexpr":
            continue
        if ty.startswith("*"):
            if i in at:
                moved.extend((len(words), *at[i]))
                words.append(0)
            elif value is None or type(value) is int:
                words.append(value or 0)
            else:
                return None
            continue
        w = _word(ty, value)
        if w is None:
            return None
        words.append(w)
    if len(moved) != 3 * len(patches):
        return None  # a re-based argument that is not a pointer parameter
    words += [0, 0]  # global and profile scratch: none (direct launches only)
    g = (*grid, 1, 1)[:3]
    flags = (1 if pdl else 0) | (2 if cooperative else 0)
    head = [compiled.function, *g, 32 * num_warps, shared, flags, len(words), len(patches),
            -1, 0]
    return head + words + moved


def pack(launches) -> tuple[bytes, tuple] | None:
    """The C replay program of recorded launches, each (kind, compiled kernel or library
    function, direct launcher or None, grid, arguments, patches) with kind "kernel" or
    "call"; None when any launch is not covered (the Python replay serves the program)."""
    words = [len(launches)]
    calls = []
    for kind, target, direct, grid, args, patches in launches:
        if kind == "call":
            form = CALL_FORMS.get(target)
            lt = form(args) if form is not None else None
            if lt is not None:  # a cuBLASLt call the C loop makes itself
                head, at, lock = lt
                body = list(head) + [0] * (LT_WORDS - len(head))
                moved = [v for i, slot, off in patches for v in (at[i], slot, off)]
                words += [0, 0, 0, 0, 0, 0, 0, LT_WORDS, len(patches), len(calls), 1]
                words += body + moved
                calls.append(lock)
                continue
            template = tuple(None if any(i == p[0] for p in patches) else a
                             for i, a in enumerate(args))
            moved = [v for p in patches for v in p]
            words += [0, 0, 0, 0, 0, 0, 0, 0, len(patches), len(calls), 0] + moved
            calls.append((target, template))
            continue
        w = _kernel_words(target, direct, grid, args, patches)
        if w is None:
            return None
        words += w
    for v in words:
        if not -(1 << 63) <= v < (1 << 64):
            return None
    data = b"".join(struct.pack("<Q" if v >= (1 << 63) else "<q", v) for v in words)
    return data, tuple(calls)


def raw_stream(device: int) -> int:
    return torch._C._cuda_getCurrentRawStream(device)
