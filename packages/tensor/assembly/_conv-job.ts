// Field offsets (bytes) of the conv job descriptor the host fills (src/wasm/wasm-conv.ts), shared by
// the float conv (_conv.ts) and the integer conv (_int-conv.ts).

// @ts-ignore: decorator
@inline export const N: usize = 8;
// @ts-ignore: decorator
@inline export const C: usize = 12;
// @ts-ignore: decorator
@inline export const ID: usize = 16;
// @ts-ignore: decorator
@inline export const IH: usize = 20;
// @ts-ignore: decorator
@inline export const IW: usize = 24;
// @ts-ignore: decorator
@inline export const KD: usize = 28;
// @ts-ignore: decorator
@inline export const KH: usize = 32;
// @ts-ignore: decorator
@inline export const KW: usize = 36;
// @ts-ignore: decorator
@inline export const OD: usize = 40;
// @ts-ignore: decorator
@inline export const OH: usize = 44;
// @ts-ignore: decorator
@inline export const OW: usize = 48;
// @ts-ignore: decorator
@inline export const SD: usize = 52;
// @ts-ignore: decorator
@inline export const SH: usize = 56;
// @ts-ignore: decorator
@inline export const SW: usize = 60;
// @ts-ignore: decorator
@inline export const PD: usize = 64;
// @ts-ignore: decorator
@inline export const PH: usize = 68;
// @ts-ignore: decorator
@inline export const PW: usize = 72;
// @ts-ignore: decorator
@inline export const DD: usize = 76;
// @ts-ignore: decorator
@inline export const DH: usize = 80;
// @ts-ignore: decorator
@inline export const DW: usize = 84;
// @ts-ignore: decorator
@inline export const COUT: usize = 88;
// @ts-ignore: decorator
@inline export const GROUPS: usize = 92;
// @ts-ignore: decorator
@inline export const X: usize = 96;
// @ts-ignore: decorator
@inline export const WEIGHT: usize = 100;
// @ts-ignore: decorator
@inline export const Y: usize = 108; // forward output
// @ts-ignore: decorator
@inline export const TILE: usize = 132; // output rows (OD·OH flattened) per column band
// @ts-ignore: decorator
@inline export const COLS_LEN: usize = 140; // floats of one column buffer
// @ts-ignore: decorator
@inline export const SCRATCH: usize = 144; // per thread (144, 148): cols, dcols (COLS_LEN + COLS_SLACK floats each), pad, dpad
// @ts-ignore: decorator
@inline export const PAD_D: usize = 152; // padded image dims
// @ts-ignore: decorator
@inline export const PAD_H: usize = 156;
// @ts-ignore: decorator
@inline export const PAD_W: usize = 160;
// @ts-ignore: decorator
@inline export const PAD_LEN: usize = 164; // floats of one padded-image buffer (slack included); 0: the conv does not pad

/** The i32 field at byte `offset` of the job descriptor at `job`. */
// @ts-ignore: decorator
@inline export function field(job: usize, offset: usize): i32 {
  return load<i32>(job + offset);
}

/** Reduction rows of one group, C/groups · KD·KH·KW: the columns of a group's weight matrix. */
// @ts-ignore: decorator
@inline export function groupReduction(job: usize): i32 {
  return (field(job, C) / field(job, GROUPS)) * field(job, KD) * field(job, KH) * field(job, KW);
}

/** Values in one channel of an input image, ID·IH·IW. */
// @ts-ignore: decorator
@inline export function inputPlane(job: usize): i32 {
  return field(job, ID) * field(job, IH) * field(job, IW);
}

/** Output rows, OD·OH flattened (each OW values long). */
// @ts-ignore: decorator
@inline export function outputRows(job: usize): i32 {
  return field(job, OD) * field(job, OH);
}
