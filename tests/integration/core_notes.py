#!/usr/bin/env python3
"""Reads and rewrites the notes of an x86-64 ELF core, for tests.

    core_notes.py strip CORE OUT        OUT: CORE without its NT_FILE note
    core_notes.py retype CORE OUT       OUT: CORE with NT_FILE's type changed
    core_notes.py files CORE            the NT_FILE entries, one a line

Old gcores wrote no NT_FILE note; a core made here with the note removed
(the notes after it move up, PT_NOTE's size shrinks) or with its type
changed to one no reader knows is such a core, with the same memory.
"""
import struct
import sys

NT_FILE = 0x46494C45
PT_NOTE = 4


def _phdrs(data):
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    return [(phoff + i * phentsize,
             struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize))
            for i in range(phnum)]


def _align4(n):
    return (n + 3) & ~3


def notes(data):
    """(PT_NOTE header offset, [(note offset, size, name, type, desc)])."""
    out = []
    for hoff, (ptype, _fl, off, _va, _pa, filesz, _ms, _al) in _phdrs(data):
        if ptype != PT_NOTE:
            continue
        pos = off
        while pos + 12 <= off + filesz:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            desc_off = pos + 12 + _align4(namesz)
            size = 12 + _align4(namesz) + _align4(descsz)
            out.append((hoff, pos, size, name, ntype, data[desc_off:desc_off + descsz]))
            pos += size
    return out


def nt_file(data):
    """The NT_FILE entries: [(start, end, file offset, path)], or None."""
    for _h, _pos, _size, name, ntype, desc in notes(data):
        if ntype == NT_FILE and name == b"CORE":
            count, page = struct.unpack_from("<QQ", desc, 0)
            names = desc[16 + 24 * count:].split(b"\0")
            return [struct.unpack_from("<QQQ", desc, 16 + 24 * i)[:2] +
                    (struct.unpack_from("<Q", desc, 16 + 24 * i + 16)[0] * page,
                     names[i].decode())
                    for i in range(count)]
    return None


def without_nt_file(src, dst, mode="strip"):
    """Writes src to dst without its NT_FILE note ("strip"), or with the
    note's type changed ("retype"). Raises if src has none."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    for hoff, pos, size, name, ntype, _desc in notes(bytes(data)):
        if ntype != NT_FILE or name != b"CORE":
            continue
        if mode == "retype":
            struct.pack_into("<I", data, pos + 8, 0x7e57)  # no known type
        else:
            # The rest of the notes segment moves up over the note, its
            # size shrinks; the freed bytes are zeroed, not left as a note.
            ptype, fl, off, va, pa, filesz, ms, al = struct.unpack_from("<IIQQQQQQ", data, hoff)
            end = off + filesz
            data[pos:end - size] = data[pos + size:end]
            data[end - size:end] = bytes(size)
            struct.pack_into("<IIQQQQQQ", data, hoff, ptype, fl, off, va, pa,
                             filesz - size, ms, al)
        with open(dst, "wb") as f:
            f.write(data)
        return
    raise ValueError("%s has no NT_FILE note" % src)


def main():
    if len(sys.argv) == 4 and sys.argv[1] in ("strip", "retype"):
        without_nt_file(sys.argv[2], sys.argv[3], sys.argv[1])
    elif len(sys.argv) == 3 and sys.argv[1] == "files":
        with open(sys.argv[2], "rb") as f:
            for start, end, off, path in nt_file(f.read()) or []:
                print("0x%x-0x%x 0x%x %s" % (start, end, off, path))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
