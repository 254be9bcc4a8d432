"""What a session owns in native memory: its variables, numbered as the graph numbers them
(Graph.stored_variables), which plans read and write in place; and the scratch arenas its runs
take and give back."""
import numpy as np

from pygrad import _C


class SessionStore:
    """The native memory of one session for one graph. A variable is created when a plan or a write
    first needs it; hidden state (a random op's counter) starts at its session_start()."""

    def __init__(self, graph):
        self.native = _C.VarStore()
        self.arenas = _C.Arenas()
        self._entries = graph.stored_variables  # the graph's list: it grows as variables are added
        self.folded = {}  # the folded filters its plans share (pygrad/fold_constants.py)

    def id_of(self, var_op):
        """The store id of a VariableV2 op."""
        index = var_op.attrs["var_index"]
        while len(self.native) <= index:
            v = self._entries[len(self.native)]
            i = self.native.add(v.op.name, v.dtype.code, v.shape.as_list())
            if hasattr(v, "session_start"):
                self.native.write(i, np.full(v.shape.as_list(), v.session_start(), v.dtype.np))
        return index

    def write(self, var, value):
        """Writes value into var (a Variable), which is then initialized."""
        value = np.require(np.asarray(value, dtype=var.dtype.np), requirements=("C", "A")).reshape(var.shape.as_list())
        self.native.write(self.id_of(var.op), value)

    def place(self, var, array):
        """Moves var's storage into array (its dtype and shape, C-contiguous, 64-byte aligned),
        which the store keeps alive: shared memory, say. Only before a plan has used var."""
        self.native.place(self.id_of(var.op), array)

    def copy_rows(self, var, indices, rows, into_variable):
        """Rows indices (int64) of var into rows ([n] + its row shape), or rows into them."""
        self.native.copy_rows(self.id_of(var.op), indices, rows, into_variable)

    def entry_named(self, name):
        """The Variable (or hidden state) whose op is named name, or None."""
        return next((v for v in self._entries if v.op.name == name), None)
