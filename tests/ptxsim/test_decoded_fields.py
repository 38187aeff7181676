"""Decoded instruction fields are named attributes set once at decode (ptxsim.program.Decoded), not string keys."""
import pytest
from ptxkit import kernel

from ptxsim.program import Decoded, OperandKind

pytestmark = pytest.mark.sim


def test_decode_sets_the_fields_a_family_reads_and_leaves_the_rest_unset():
    prog = kernel("setp.lt.and.u32 %p1, %r1, 4, %p2; cvt.rzi.s32.f32 %r3, %f1;").program
    setp = next(i for i in prog.instrs if i.op == "setp")
    cvt = next(i for i in prog.instrs if i.op == "cvt")
    assert setp.aux.cmp == ".lt" and setp.aux.combine is not None and setp.aux.mode is None
    assert cvt.aux.mode == ".rzi" and cvt.aux.cmp is None
    assert setp.ops[0].kind is OperandKind.REG and setp.ops[2].kind is OperandKind.IMM


def test_a_misspelt_field_fails_instead_of_making_a_new_one():
    d = Decoded()
    with pytest.raises(AttributeError):
        d.update(moed=".rn")
    with pytest.raises(AttributeError):
        d.moed = ".rn"
