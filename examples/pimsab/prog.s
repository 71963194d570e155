; two 8-bit adds and a multiply on tile 0 (no DRAM traffic): a timing/ablation example
.tile 0
    add  r16, i9, r0, i8, r8, i8
    add  r32, i9, r16, i9, r8, i8
    mult r48, i16, r0, i8, r8, i8
