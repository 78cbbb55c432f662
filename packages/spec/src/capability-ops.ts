import { closeNames, hasOp, listOps, UnknownOpError } from '@qtk/tensor';

/**
 * Throws UnknownOpError for the first op of a capability table that QTK's op catalog does not
 * know (a typo, or a march's own op it has not added with defineOp), naming close catalog ops.
 */
export function checkTableOps(ops: readonly { op: string; fusable?: readonly string[] }[], where: string): void {
  for (const op of ops.flatMap((o) => [o.op, ...(o.fusable ?? [])])) {
    if (!hasOp(op))
      throw new UnknownOpError(
        op,
        closeNames(
          op,
          listOps().map((o) => o.name),
        ),
        where,
      );
  }
}
