/* The dealer's screen (after dealer.js): the starting stack to issue at seating, confirmed by the chip reader.
   Registered with Showdown.extend("dealer", {init, render}). */
"use strict";
