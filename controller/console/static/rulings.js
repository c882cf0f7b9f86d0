/* The dealer's screen (after dealer.js): a supervisor's rulings: several alerts resolved in one act, a settled hand voided or corrected at the table.
   Registered with Showdown.extend("dealer", {init, render}). */
"use strict";
