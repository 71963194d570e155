; Listing 1 of the PIMSAB paper: an int8 element-wise multiply over every CRAM of tile 0
.config base
.tile 0
    load  r0,  0x000000, all, i8
    load  r8,  0x010000, all, i8
    mult  r16, i16, r8, i8, r0, i8
    store 0x020000, r16, all, i16
