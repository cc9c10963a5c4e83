// The `user` driver: each user record is one account in the shared UserTable that the admin
// API's Digest authenticator reads. Passwords never appear in status.
import type { Resource } from '../config/types.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { USERS_SERVICE, type UserRecord, UserTable } from './users-table.ts';

type Spec = SpecOf<'user'>;

/** The table published under USERS_SERVICE, created there on first use. */
export function usersTable(host: Host): UserTable {
  let table = host.services.get(USERS_SERVICE);
  if (!table) {
    table = new UserTable();
    host.services.set(USERS_SERVICE, table);
  }
  return table;
}

function toRecord(spec: Spec): UserRecord {
  // The schema allows only admin|viewer, with its default; still, anything else gets the least
  // power, not the most.
  return {
    login: spec.login,
    password: spec.password,
    role: spec.role === 'admin' ? 'admin' : 'viewer',
  };
}

class UserInstance implements Instance<Spec> {
  private user: UserRecord;
  private closed = false;

  constructor(
    res: Resource<Spec>,
    private readonly table: UserTable,
  ) {
    this.user = toRecord(res.spec);
    table.set(this.user);
  }

  async update(next: Resource<Spec>): Promise<void> {
    const u = toRecord(next.spec);
    if (u.login !== this.user.login) {
      this.table.delete(this.user.login);
    }
    this.user = u;
    this.table.set(u);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const cur = this.table.get(this.user.login);
    // Only remove our own entry: a renamed sibling may already own the login.
    if (cur && cur.password === this.user.password && cur.role === this.user.role) {
      this.table.delete(this.user.login);
    }
  }

  status(): ResourceStatus {
    return {
      state: this.closed ? 'closed' : 'active',
      login: this.user.login,
      role: this.user.role,
    };
  }
}

export const userDriver: KindDriver<'user'> = {
  kind: 'user',
  async create(res, host) {
    return new UserInstance(res, usersTable(host));
  },
};
