import { ApiError } from '../errors.js'

export const roles = ['owner', 'developer', 'viewer'] as const
/** `owner`: everything, members too; `developer`: tokens; `viewer`: reads, changes nothing. */
export type Role = (typeof roles)[number]
export const isRole = (value: unknown): value is Role => roles.includes(value as Role)

const rank: Record<Role, number> = { viewer: 0, developer: 1, owner: 2 }
/** Whether `role` may do what `needed` may. */
export const allows = (role: Role, needed: Role) => rank[role] >= rank[needed]
/** Sorts owners first, then developers, then viewers. */
export const byRank = (a: Role, b: Role) => rank[b] - rank[a]

export function checkRole(value: unknown): Role {
  if (!isRole(value)) throw new ApiError('memberInvalid', 'role must be owner, developer or viewer')
  return value
}
