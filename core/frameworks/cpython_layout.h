// CPython 3.11 memory layout, as the cpython framework module reads it.
//
// CPython ships without DWARF on most distributions, so the module cannot
// ask debug info where a member lives: the offsets are copied from the 3.11
// headers (Include/, Include/internal/ with Py_BUILD_CORE) for x86-64. One
// table, so tests/frameworks/cpython/offsets.c can compare every entry
// with offsetof() on the installed headers and a wrong entry fails a test.
#ifndef HD_CPYTHON_LAYOUT_H
#define HD_CPYTHON_LAYOUT_H

// X(NAME, OFFSET, STRUCT, MEMBER): HD_PY311_NAME == offsetof(STRUCT, MEMBER)
// in CPython 3.11.
#define HD_PY311_OFFSETS(X)                                                   \
	X(OB_REFCNT, 0, PyObject, ob_refcnt)                                  \
	X(OB_TYPE, 8, PyObject, ob_type)                                      \
	X(OB_SIZE, 16, PyVarObject, ob_size)                                  \
	X(TP_NAME, 24, PyTypeObject, tp_name)                                 \
	X(TP_BASICSIZE, 32, PyTypeObject, tp_basicsize)                       \
	X(TP_ITEMSIZE, 40, PyTypeObject, tp_itemsize)                         \
	X(TP_FLAGS, 168, PyTypeObject, tp_flags)                              \
	X(TP_WEAKLISTOFFSET, 208, PyTypeObject, tp_weaklistoffset)            \
	X(TP_DICTOFFSET, 288, PyTypeObject, tp_dictoffset)                    \
	X(LIST_ITEM, 24, PyListObject, ob_item)                               \
	X(LIST_ALLOCATED, 32, PyListObject, allocated)                        \
	X(TUPLE_ITEM, 24, PyTupleObject, ob_item)                             \
	X(DICT_USED, 16, PyDictObject, ma_used)                               \
	X(DICT_KEYS, 32, PyDictObject, ma_keys)                               \
	X(DICT_VALUES, 40, PyDictObject, ma_values)                           \
	X(DK_LOG2_SIZE, 8, PyDictKeysObject, dk_log2_size)                    \
	X(DK_LOG2_INDEX_BYTES, 9, PyDictKeysObject, dk_log2_index_bytes)      \
	X(DK_KIND, 10, PyDictKeysObject, dk_kind)                             \
	X(DK_NENTRIES, 24, PyDictKeysObject, dk_nentries)                     \
	X(DK_INDICES, 32, PyDictKeysObject, dk_indices)                       \
	X(DKE_KEY, 8, PyDictKeyEntry, me_key)                                 \
	X(DKE_VALUE, 16, PyDictKeyEntry, me_value)                            \
	X(DKU_KEY, 0, PyDictUnicodeEntry, me_key)                             \
	X(DKU_VALUE, 8, PyDictUnicodeEntry, me_value)                         \
	X(SET_MASK, 32, PySetObject, mask)                                    \
	X(SET_TABLE, 40, PySetObject, table)                                  \
	X(SET_SMALLTABLE, 64, PySetObject, smalltable)                        \
	X(SETENTRY_KEY, 0, setentry, key)                                     \
	X(MODULE_DICT, 16, PyModuleObject, md_dict)                           \
	X(RUNTIME_INTERP_HEAD, 40, _PyRuntimeState, interpreters.head)        \
	X(INTERP_NEXT, 0, PyInterpreterState, next)                           \
	X(INTERP_RUNTIME, 40, PyInterpreterState, runtime)                    \
	X(INTERP_MODULES, 888, PyInterpreterState, modules)                   \
	X(ASCII_LENGTH, 16, PyASCIIObject, length)                            \
	X(ASCII_STATE, 32, PyASCIIObject, state)

// X(NAME, SIZE, TYPE): HD_PY311_SIZEOF_NAME == sizeof(TYPE).
#define HD_PY311_SIZES(X)                                                     \
	X(GC_HEAD, 16, PyGC_Head)                                             \
	X(ASCII_OBJECT, 48, PyASCIIObject)    /* compact ASCII data follows */ \
	X(DICT_KEY_ENTRY, 24, PyDictKeyEntry)                                 \
	X(DICT_UNICODE_ENTRY, 16, PyDictUnicodeEntry)                         \
	X(SETENTRY, 16, setentry)

// X(NAME, VALUE, EXPR): HD_PY311_NAME == EXPR (flags of object.h).
#define HD_PY311_FLAGS(X)                                                     \
	X(TPFLAGS_MANAGED_DICT, 1ul << 4, Py_TPFLAGS_MANAGED_DICT)            \
	X(TPFLAGS_HEAPTYPE, 1ul << 9, Py_TPFLAGS_HEAPTYPE)                     \
	X(TPFLAGS_READY, 1ul << 12, Py_TPFLAGS_READY)                         \
	X(TPFLAGS_HAVE_GC, 1ul << 14, Py_TPFLAGS_HAVE_GC)                     \
	X(TPFLAGS_LIST_SUBCLASS, 1ul << 25, Py_TPFLAGS_LIST_SUBCLASS)         \
	X(TPFLAGS_TUPLE_SUBCLASS, 1ul << 26, Py_TPFLAGS_TUPLE_SUBCLASS)       \
	X(TPFLAGS_BYTES_SUBCLASS, 1ul << 27, Py_TPFLAGS_BYTES_SUBCLASS)       \
	X(TPFLAGS_UNICODE_SUBCLASS, 1ul << 28, Py_TPFLAGS_UNICODE_SUBCLASS)   \
	X(TPFLAGS_DICT_SUBCLASS, 1ul << 29, Py_TPFLAGS_DICT_SUBCLASS)         \
	X(TPFLAGS_TYPE_SUBCLASS, 1ul << 31, Py_TPFLAGS_TYPE_SUBCLASS)         \
	X(DICT_KEYS_GENERAL, 0, DICT_KEYS_GENERAL)                            \
	X(VERSION_HEX_3_11, 0x030b0000ul, 0x030b0000ul)

#define HD_PY311_ENUM_OFFSET(name, value, type, member) HD_PY311_##name = value,
#define HD_PY311_ENUM_SIZE(name, value, type) HD_PY311_SIZEOF_##name = value,
#define HD_PY311_ENUM_FLAG(name, value, expr) HD_PY311_##name = value,
enum {
	HD_PY311_OFFSETS(HD_PY311_ENUM_OFFSET)
	HD_PY311_SIZES(HD_PY311_ENUM_SIZE)
};
// Flags need 64 bits (TYPE_SUBCLASS is bit 31): constants, not an enum.
#define HD_PY311_FLAG_CONST(name, value, expr) \
	static const unsigned long HD_PY311_##name = value;
HD_PY311_FLAGS(HD_PY311_FLAG_CONST)

// pymalloc (Objects/obmalloc.c of 3.11, not in any header): on 64-bit
// builds with the radix tree (the default) USE_LARGE_ARENAS and
// USE_LARGE_POOLS hold, so ARENA_BITS 20 and POOL_BITS 14.
#define HD_PYMALLOC_ALIGNMENT 16u         // ALIGNMENT
#define HD_PYMALLOC_POOL_SIZE 16384u      // POOL_SIZE (1 << POOL_BITS)
#define HD_PYMALLOC_ARENA_SIZE (1u << 20) // ARENA_SIZE (1 << ARENA_BITS)
#define HD_PYMALLOC_SIZE_CLASSES 32u      // NB_SMALL_SIZE_CLASSES (512 / 16)
// struct pool_header {
//	union { block *_padding; uint count; } ref;  // 0
//	block *freeblock;                             // 8
//	struct pool_header *nextpool;                 // 16
//	struct pool_header *prevpool;                 // 24
//	uint arenaindex;                              // 32
//	uint szidx;                                   // 36
//	uint nextoffset;                              // 40
//	uint maxnextoffset;                           // 44
// };
#define HD_PYMALLOC_POOL_COUNT 0
#define HD_PYMALLOC_POOL_FREEBLOCK 8
#define HD_PYMALLOC_POOL_ARENAINDEX 32
#define HD_PYMALLOC_POOL_SZIDX 36
#define HD_PYMALLOC_POOL_NEXTOFFSET 40
#define HD_PYMALLOC_POOL_MAXNEXTOFFSET 44
// POOL_OVERHEAD: sizeof(struct pool_header) rounded up to ALIGNMENT.
#define HD_PYMALLOC_POOL_OVERHEAD 48u

#endif
