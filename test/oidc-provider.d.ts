// The part of oidc-provider (no types of its own) that test/oidc.ts uses.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  export interface KoaContextWithOIDC {
    oidc: {
      client?: { clientId: string }
      session?: { accountId?: string }
      provider: Provider
    }
  }

  interface Grant {
    addOIDCScope(scope: string): void
    save(): Promise<string>
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    Grant: new (properties: {
      clientId: string
      accountId: string
    }) => Grant
    callback(): (req: IncomingMessage, res: ServerResponse) => void
  }
}
