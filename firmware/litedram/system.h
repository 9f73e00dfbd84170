/* LiteDRAM's generated headers include this file; nothing of it is used. */
