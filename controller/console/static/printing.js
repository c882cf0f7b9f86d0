/* The dealer's screen (after dealer.js): the score slip printed on the table's receipt printer.
   Registered with Showdown.extend("dealer", {init, render}). */
"use strict";
