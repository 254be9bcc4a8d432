"""tf.gfile: TF1's file functions, on the local file system."""
import glob as _glob
import os
import shutil

from pygrad import errors


def _not_found(path, what):
    return errors.NotFoundError(None, None, f"{path}; No such file or directory ({what})")


class GFile:
    """A file object (TF's GFile): open() with TF's modes; binary unless 'b' is left out."""

    def __init__(self, name, mode="r"):
        try:
            self._f = open(name, mode)
        except FileNotFoundError:
            raise _not_found(name, "GFile") from None
        self.name, self.mode = name, mode

    def __getattr__(self, attr):
        return getattr(self._f, attr)

    def __iter__(self):
        return iter(self._f)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def size(self):
        return os.path.getsize(self.name)


Open = GFile
FastGFile = GFile


def Exists(path):  # noqa: N802 (TF's names)
    return os.path.exists(path)


def IsDirectory(path):  # noqa: N802
    return os.path.isdir(path)


def MakeDirs(path):  # noqa: N802
    os.makedirs(path, exist_ok=True)


def MkDir(path):  # noqa: N802
    try:
        os.mkdir(path)
    except FileExistsError:
        raise errors.AlreadyExistsError(None, None, f"{path}; File exists") from None


def ListDirectory(path):  # noqa: N802
    if not os.path.isdir(path):
        raise _not_found(path, "ListDirectory")
    return sorted(os.listdir(path))


def Glob(pattern):  # noqa: N802
    return sorted(_glob.glob(pattern))


def Remove(path):  # noqa: N802
    try:
        os.remove(path)
    except FileNotFoundError:
        raise _not_found(path, "Remove") from None


def DeleteRecursively(path):  # noqa: N802
    if not os.path.exists(path):
        raise _not_found(path, "DeleteRecursively")
    shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def Rename(oldname, newname, overwrite=False):  # noqa: N802
    if os.path.exists(newname) and not overwrite:
        raise errors.AlreadyExistsError(None, None, f"{newname}; File exists")
    os.replace(oldname, newname)


def Copy(oldpath, newpath, overwrite=False):  # noqa: N802
    if os.path.exists(newpath) and not overwrite:
        raise errors.AlreadyExistsError(None, None, f"{newpath}; File exists")
    shutil.copyfile(oldpath, newpath)


def Walk(top, in_order=True):  # noqa: N802
    for root, dirs, files in os.walk(top, topdown=in_order):
        yield root, dirs, files


class FileStatistics:
    """What Stat tells of a file: length (bytes), mtime_nsec and is_directory (TF's). As TF's local
    file system, mtime_nsec counts whole seconds and a directory's length is its st_size."""

    def __init__(self, length, mtime_nsec, is_directory):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self):
        return f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, is_directory={self.is_directory})"


def Stat(path):  # noqa: N802
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _not_found(path, "Stat") from None
    return FileStatistics(st.st_size, st.st_mtime_ns // 10**9 * 10**9, os.path.isdir(path))
