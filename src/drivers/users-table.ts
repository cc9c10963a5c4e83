// The admin API's accounts, kept by the `user` driver and read by the Digest authenticator.
import { ServiceKey } from '../util/services.ts';

export type Role = 'admin' | 'viewer';

export interface UserRecord {
  login: string;
  password: string;
  role: Role;
}

export const USERS_SERVICE = new ServiceKey<UserTable>('users');

export class UserTable {
  private byLogin = new Map<string, UserRecord>();

  set(user: UserRecord): void {
    this.byLogin.set(user.login, { ...user });
  }

  delete(login: string): void {
    this.byLogin.delete(login);
  }

  get(login: string): UserRecord | undefined {
    return this.byLogin.get(login);
  }

  size(): number {
    return this.byLogin.size;
  }
}
