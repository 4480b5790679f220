"""Next-best-view control (docs/architecture.md "nbv"): settings and spaces, motions, observation
features, the one NBV core and its ports, the Gymnasium wrapper and env, mappers, vector envs, the
registration of the NBV ids, the files beside a trained policy, and PPO training (SB3 and RLlib)."""
