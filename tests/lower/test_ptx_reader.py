"""Reading PTX (tilegemm.lower.facts.ptx, .descriptors and .facts): instructions, register values, control flow,
barrier waits."""
import pytest

from tilegemm.lower.facts import KernelFacts
from tilegemm.lower.facts.descriptors import decode_tcgen05_instr, decode_tcgen05_smem, decode_wgmma_smem
from tilegemm.lower.facts.ptx import Env, Program, Unknown

KERNEL = """
.visible .entry k(
    .param .u64 k_param_0
)
.reqntid 256, 1, 1
{
    .reg .b32 %r<20>;
    mov.b32 %r1, __dynamic_shmem__0;
    mov.u32 %r2, %tid.x;
    shr.u32 %r3, %r2, 5;
    shfl.sync.idx.b32 %r4, %r3, 0, 31, -1;
    and.b32 %r5, %r4, 3;
    shl.b32 %r6, %r5, 21;
    mov.b32 %r7, 1;
    shl.b32 %r8, %r7, %r5;
    mov.b64 %rd1, {%r6, %r8};
    mov.b64 {%r9, %r10}, %rd1;
    setp.gt.u32 %p1, %r4, 3;
    @%p1 bra $L__BB0_2;
    add.s32 %r11, %r1, 48;
    mbarrier.init.shared.b64 [%r11+8], %r7;
$L__BB0_2:
    xor.b32 %r7, %r7, 1;
    // begin inline asm
    {
    .reg .pred P1;
    LAB_WAIT:
    mbarrier.try_wait.parity.shared.b64 P1, [%r1], %r7, 10000000;
    @P1 bra.uni DONE;
    bra.uni LAB_WAIT;
    DONE:
    }
    // end inline asm
    ret;
}
"""


@pytest.fixture(scope="module")
def program():
    return Program(KERNEL)


def ins(program, opcode):
    return next(i for i in program.instructions if i.opcode.startswith(opcode))


def test_instructions_keep_their_opcode_operands_guard_and_the_block_size(program):
    assert program.entries == ["k"] and program.reqntid == 256
    branch = ins(program, "bra")
    assert branch.guard == "%p1" and branch.operands == ("$L__BB0_2",)
    assert ins(program, "mbarrier.init").operands == ("[%r11+8]", "%r7")


def test_values_fold_special_registers_shifts_shuffles_and_64_bit_packs(program):
    env = Env(special={"%tid.x": 5 * 32 + 7})                  # warp 5: lane quarter 1
    assert program.value("%r6", env) == 1 << 21
    assert program.value("%r9", env) == 1 << 21 and program.value("%r10", env) == 2
    with pytest.raises(Unknown):
        program.value("%r6", Env())                             # depends on %tid.x, which the env lacks


def test_shared_memory_addresses_are_offsets_into_the_dynamic_shared_memory(program):
    init = ins(program, "mbarrier.init")
    assert program.address_value(init.operands[0], Env()) == 56


def test_a_register_defined_twice_is_read_from_its_definition_earlier_in_the_block(program):
    shift = next(i for i in program.instructions if i.operands[:1] == ("%r8",))
    assert program.value("%r7", Env(), at=shift.index) == 1      # the mov before it, not the later xor
    assert program.value("%r8", Env(special={"%tid.x": 2 * 32})) == 1 << 2
    init = ins(program, "mbarrier.init")
    with pytest.raises(Unknown):
        program.value("%r7", Env(), at=init.index)             # defined in another block: not followed
    assert program.value("%r7", Env(opaque=0), at=init.index) == 1   # ... unless run-time values are given: then
                                                                       # the only definition before its block


LOOP = """
.visible .entry loop(
    .param .u64 loop_param_0
)
{
    .reg .b32 %r<20>;
    .reg .pred %p<4>;
    mov.b32 %r1, __dynamic_shmem__0;
    mov.b32 %r2, 2;
    mov.b32 %r3, -5;
$L__BB0_1:
    add.s32 %r4, %r3, 5;
    add.s32 %r5, %r2, -7;
    setp.lt.u32 %p1, %r4, 3;
    selp.b32 %r6, %r2, %r5, %p1;
    shl.b32 %r7, %r6, 3;
    add.s32 %r8, %r1, %r7;
    mbarrier.try_wait.parity.shared.b64 %p2, [%r8], 0;
    add.s32 %r3, %r3, 2;
    add.s32 %r2, %r2, 2;
    setp.ne.b32 %p3, %r2, 12;
    @%p3 bra $L__BB0_1;
    ret;
}
"""


def test_registers_a_loop_carries_are_read_at_the_first_iteration_together():
    # step % 7 kept as a counter (%r2, from 2) wrapped by a conditional subtract driven by another (%r3): taken both
    # at 0 they named byte -56 (stage -7); entering the loop they name stage 2's barrier
    program = Program(LOOP)
    wait = ins(program, "mbarrier.try_wait")
    assert program.address_value(wait.operands[1], Env(opaque=0), at=wait.index) == 2 * 8
    with pytest.raises(Unknown):
        program.address_value(wait.operands[1], Env(), at=wait.index)   # nothing run-time known: not derivable


def test_control_flow_reaches_an_instruction_only_for_the_warps_that_take_its_path(program):
    init = ins(program, "mbarrier.init")
    assert program.reaches(init, Env(special={"%tid.x": 3 * 32}))
    assert not program.reaches(init, Env(special={"%tid.x": 4 * 32}))
    assert program.reaches(init, Env())                        # unknown warp: both ways


def test_inline_asm_labels_are_local_to_their_block(program):
    wait = ins(program, "mbarrier.try_wait")
    back = next(i for i in program.instructions if i.opcode == "bra.uni" and i.operands == ("LAB_WAIT",))
    assert program.target(back).index == wait.index - 1


def test_after_a_failed_try_a_wait_loops_back_to_it_and_after_a_successful_one_it_goes_on(program):
    wait = ins(program, "mbarrier.try_wait")
    failing, passing = (program.after(wait, Env(special={"P1": p})) for p in (0, 1))
    assert wait in failing and "ret" not in {i.opcode for i in failing}
    assert wait not in passing and "ret" in {i.opcode for i in passing}


BOUNDED_WAIT = """
.visible .entry k()
{
    mov.b32 %r1, __dynamic_shmem__0;
    mov.b32 %r2, 1;
    mov.u64 %rd1, %globaltimer;
    mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r1+16], %r2;
    @%p1 bra $L__BB0_4;
$L__BB0_2:
    mov.u64 %rd2, %globaltimer;
    sub.s64 %rd3, %rd2, %rd1;
    setp.lt.s64 %p2, %rd3, 500000001;
    @%p2 bra $L__BB0_3;
    trap;
$L__BB0_3:
    add.s32 %r3, %r1, 16;
    mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 %p3, [%r3], %r2;
    not.pred %p4, %p3;
    @%p4 bra $L__BB0_2;
$L__BB0_4:
    mbarrier.test_wait.parity.shared::cta.b64 %p5, [%r1+24], 0;
    ret;
}
"""


def test_a_wait_is_its_first_try_and_the_retries_of_its_loop_and_not_the_waits_after_it():
    waits = KernelFacts(BOUNDED_WAIT).barrier_waits
    assert [[(t.offset, t.parity) for t in w.tries] for w in waits] == [
        [(16, 1), (16, 1)],             # the first try and the timed retry of a bounded wait
        [(24, 0)]]


def test_descriptor_fields_sit_where_the_ptx_isa_puts_them():
    """Each field set alone, at the bit positions of the PTX ISA tables, decodes to that field only."""
    idesc = decode_tcgen05_instr((1 << 4) | (1 << 7) | (1 << 16) | ((256 >> 3) << 17) | ((128 >> 4) << 24))
    assert (idesc.d_type, idesc.a_type, idesc.b_type, idesc.b_major_mn, idesc.a_major_mn) == (1, 1, 0, True, False)
    assert (idesc.n, idesc.m) == (256, 128)
    smem = decode_tcgen05_smem((0x400 >> 4) | ((8192 >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 46) | (2 << 61))
    assert (smem.start, smem.lbo, smem.sbo, smem.version, smem.swizzle) == (0x400, 8192, 1024, 1, 128)
    wgmma = decode_wgmma_smem((1 << 16) | (64 << 32) | (1 << 62))
    assert (wgmma.lbo, wgmma.sbo, wgmma.swizzle) == (16, 1024, 128)


def test_a_remainder_by_a_constant_is_followed_through_its_high_multiply():
    # step % 6 as compilers emit it, step - 6 * (mulhi(step, 0xAAAAAAAB) >> 2), with the loop entered at step 8
    program = Program(LOOP.replace("mov.b32 %r2, 2;", "mov.b32 %r2, 8;").replace("    add.s32 %r4, %r3, 5;", """\
    mul.hi.u32 %r10, %r2, -1431655765;
    shr.u32 %r11, %r10, 2;
    mul.lo.s32 %r12, %r11, 6;
    sub.s32 %r13, %r2, %r12;
    add.s32 %r4, %r3, 5;"""))
    sub = next(i for i in program.instructions if i.operands[:1] == ("%r13",))
    assert program.value("%r13", Env(opaque=0), at=sub.index + 1) == 8 % 6
