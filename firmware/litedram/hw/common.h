/* LiteDRAM's generated headers include this file; firmware/sdram.h defines the CSR
   accessors they use. */
