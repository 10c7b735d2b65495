# C types for the compiled build of rows.py (Cython's pure-Python mode): the row image loop.
cimport cython

@cython.locals(end=Py_ssize_t, size=Py_ssize_t, index=Py_ssize_t)
cpdef tuple read_steps(tuple steps, object data, Py_ssize_t offset)
