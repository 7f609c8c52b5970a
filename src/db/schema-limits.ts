/** An override of the namespace API: the limit of an identifier, or of those a `*` prefix matches. */
export interface RatelimitOverridesTable {
  namespace: string
  identifier: string
  /** The limit (`limit` on the wire; a reserved word in SQL). */
  quota: number
  duration: number
  created: string
  modified: string
}
